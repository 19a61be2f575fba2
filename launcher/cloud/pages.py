"""The cloud sections of the allocation page: cost per day by instance type (stacked bars, as
Liverpool's Fig. 2) and spend against budget."""
from __future__ import annotations

import json

import plotly.graph_objects as go
from django.db.models import Sum
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import TruncDate

from allocations.charts import LAYOUT
from allocations.models import Allocation, UsageRecord
from allocations.selectors import visible_allocations

from .models import Cluster
from .selectors import remaining


def cost_per_day(allocation: Allocation) -> dict:
    """Daily cost per instance type, summed in SQL (one query), as a plotly figure."""
    rows = (UsageRecord.objects.filter(allocation=allocation, source=UsageRecord.Source.CLOUD)
            .annotate(day=TruncDate("period_start"),
                      itype=KeyTextTransform("instance_type", "detail"))
            .values("day", "itype").annotate(cost=Sum("cost")).order_by("day", "itype"))
    series: dict[str, dict] = {}
    for row in rows:
        series.setdefault(row["itype"] or "other", {})[row["day"]] = float(row["cost"])
    days = sorted({d for s in series.values() for d in s})
    fig = go.Figure()
    for itype, by_day in sorted(series.items()):
        fig.add_bar(x=days, y=[round(by_day.get(d, 0.0), 4) for d in days], name=itype)
    fig.update_layout(barmode="stack", title="Cost per day by instance type",
                      yaxis_title="USD", **LAYOUT)
    return {"figure": json.loads(fig.to_json()), "has_cost": bool(days),
            "total": sum(sum(s.values()) for s in series.values())}


def allocation_sections(allocation: Allocation, user) -> list[dict]:
    """Sections for `/allocations/<id>/` (empty unless the allocation has a cluster the user
    may see): {"template": ..., "data": ...} each."""
    if not visible_allocations(user).filter(pk=allocation.pk).exists():
        return []
    cluster = Cluster.objects.filter(allocation=allocation).first()
    if cluster is None:
        return []
    return [{"template": "cloud/_cost_section.html",
             "data": {"cluster": cluster, "cost": cost_per_day(allocation),
                      "left": remaining(allocation), "budget": allocation.budget}}]
