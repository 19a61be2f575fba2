"""The cloud sections of the allocation page: cost per day by instance type (stacked bars, as
Liverpool's Fig. 2) and spend against budget."""

from __future__ import annotations

from django.db.models import Sum
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import TruncDate

from allocations.models import Allocation, UsageRecord
from core.charts import DAY_BAR_MS, GRID, LAYOUT, day_axis

from ..backends.contract import Capability
from ..backends.registry import supports
from ..selectors import can_see
from .models import Cluster
from .selectors import remaining
from .services.costs import SOURCE


def cost_per_day(allocation: Allocation) -> dict:
    """Daily cost per instance type, summed in SQL (one query), as a plotly.js figure (a dict)."""
    rows = (
        UsageRecord.objects.filter(allocation=allocation, source=SOURCE)
        .annotate(day=TruncDate("period_start"), itype=KeyTextTransform("instance_type", "detail"))
        .values("day", "itype")
        .annotate(cost=Sum("cost"))
        .order_by("day", "itype")
    )
    series: dict[str, dict] = {}
    for row in rows:
        series.setdefault(row["itype"] or "other", {})[row["day"]] = float(row["cost"])
    days = sorted({d for s in series.values() for d in s})
    x = [d.isoformat() for d in days]
    figure = {
        "data": [
            {
                "type": "bar",
                "name": itype,
                "x": x,
                "y": [round(by_day.get(d, 0.0), 4) for d in days],
                "width": [DAY_BAR_MS] * len(days),
            }
            for itype, by_day in sorted(series.items())
        ],
        "layout": {
            **LAYOUT,
            "barmode": "stack",
            "showlegend": True,  # even for one type
            "title": {"text": "Cost per day by instance type"},
            "xaxis": day_axis(days[0], days[-1]) if days else {**GRID, "type": "date"},
            "yaxis": {**GRID, "title": {"text": "USD"}, "rangemode": "tozero"},
        },
    }
    return {
        "figure": figure,
        "has_cost": bool(days),
        "total": sum(sum(s.values()) for s in series.values()),
    }


def allocation_sections(allocation: Allocation, user) -> list[dict]:
    """Sections for `/allocations/<id>/` (empty unless the allocation has a cluster the user
    may see): {"template": ..., "data": ...} each. The section shows money (cost per day, what
    is left of the budget), so it is asked only of a facility whose backend prices its work in
    money (`price_launch`, the cloud's): an allocation elsewhere has no cluster and is not
    asked for one (a query fewer on its page)."""
    if not supports(allocation.facility, Capability.PRICE_LAUNCH):
        return []
    cluster = Cluster.objects.filter(allocation_id=allocation.pk).first()
    if cluster is None or not can_see(user, allocation):  # the launcher's one rule
        return []
    return [
        {
            "template": "cloud/_cost_section.html",
            "data": {
                "cluster": cluster,
                "cost": cost_per_day(allocation),
                "left": remaining(allocation),
                "budget": allocation.budget,
            },
        }
    ]
