"""Chart data for allocation pages: plain plotly.js figures (dicts), drawn by the locally served
plotly.js (static/js/charts.js).

Built as plain dicts, not `plotly.graph_objects` figures: the server-side figure classes validate
and deep-copy every property, which cost about 70 ms a page view (docs/performance.md); the
browser's plotly.js needs only the JSON.

Axes are bounded by what the numbers mean: the usage chart (GPU-hours used against granted)
runs from the allocation's start date to its end date (with a little room either side, so the
first day's point is not hidden on the y axis), from 0 to at least the grant, with the figure
used so far written beside its last point, and its projection (at the 7-day rate,
allocations/burn.py) stops at the run-out date or the end date, whichever comes first; the
daily chart has one tick per day and spans at least a week, so one day of use is one bar of
readable width.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.core.cache import cache
from django.db.models import Sum
from django.db.models.functions import TruncDate
from django.utils import timezone
from django.utils.html import format_html, json_script

from core.charts import DAY_BAR_MS, GRID, LAYOUT, day_axis
from core.figures import rounded
from core.versions import fragment_key

from .burn import Burn
from .models import Allocation, UsageRecord

PROJECTION_LABEL = "projected at the 7-day rate"


def daily_usage(allocation: Allocation) -> list[dict[str, Any]]:
    """GPU-hours and cost per day, summed in SQL (one query)."""
    rows = (
        UsageRecord.objects.filter(allocation_id=allocation.pk)
        .annotate(day=TruncDate("period_start"))
        .values("day")
        .annotate(gpu_seconds=Sum("gpu_seconds"), cost=Sum("cost"))
        .order_by("day")
    )
    return [
        {"day": r["day"], "gpu_hours": r["gpu_seconds"] / 3600, "cost": float(r["cost"])}
        for r in rows
    ]


def allocation_charts(allocation: Allocation, burn: Burn) -> dict[str, Any]:
    """Everything the allocation page's usage card draws: the usage chart (used against
    granted, with the projection of `burn` where there is one), the daily chart, and whether
    any usage exists."""
    series = daily_usage(allocation)
    return {
        "burn_down": burn_down_figure(allocation, series, burn.runs_out_gpu_hours, burn.today),
        "daily": daily_figure(allocation, series),
        "has_usage": bool(series),
    }


def cached_allocation_charts(allocation: Allocation, burn: Burn) -> dict[str, Any]:
    """`allocation_charts`, read from the cache while nothing it is made of has changed. Its
    key holds the project's version (every charge and reservation moves the ledger columns,
    which bumps it, as does every audited change to the allocation: versions.py), today's date
    (the projection's rate, counted in whole days before today, and the daily chart's last
    day), the projected run-out date, and the allocation's own figures the charts draw (grant,
    dates, charged seconds, spend), so a charge shows on the next view even if a writer missed
    the bump."""
    key = "allocation-charts:" + fragment_key(
        allocation.pk,
        timezone.localdate(),
        allocation.gpu_hours,
        allocation.start_date,
        allocation.end_date,
        allocation.gpu_seconds_used,
        allocation.spend,
        burn.runs_out_gpu_hours,
        project_ids=[allocation.project_id],
    )
    charts = cache.get(key)
    if charts is None:
        charts = allocation_charts(allocation, burn)
        # The figures as the page's <script type="application/json"> elements, serialised once.
        charts["scripts"] = format_html(
            "{}\n{}",
            json_script(charts["burn_down"], "burn-down-data"),
            json_script(charts["daily"], "daily-data"),
        )
        cache.set(key, charts, timeout=3600)
    return charts


def _hours(allocation: Allocation) -> str:
    """The facility's hours: GPU-hours, or CPU-hours on a CPU-only one (allocations/units.py);
    GPU-hours for an allocation not tied to a facility yet (a figure drawn from a bare row)."""
    return allocation.facility.unit.hours if allocation.facility_id else "GPU-hours"


def _num(value: float) -> float:
    """Compact JSON: 6 significant digits is far below what a chart can show."""
    return float(f"{value:.6g}")


def burn_down_figure(
    allocation: Allocation,
    series: list[dict[str, Any]],
    run_out: dt.date | None,
    today: dt.date | None = None,
) -> dict[str, Any]:
    """GPU-hours used against granted over the allocation's dates (the page's usage chart; its
    element is still `#chart-burn-down`): the cumulative use to today, the grant as a
    horizontal line, even use to the end date for reference, and, when `run_out` is known, the
    projection at the 7-day rate as a dashed line from today to the run-out date or the end
    date, whichever is first. y runs from 0 to at least the grant."""
    hours = _hours(allocation)
    today = today or timezone.localdate()
    granted = float(allocation.gpu_hours)
    start, end = allocation.start_date, allocation.end_date
    days, used, total = [start.isoformat()], [0.0], 0.0
    for row in series:
        total += row["gpu_hours"]
        days.append(min(max(row["day"], start), end).isoformat())
        used.append(_num(max(total, 0.0)))
    if dt.date.fromisoformat(days[-1]) < today <= end:
        days.append(today.isoformat())  # used so far, drawn to today
        used.append(used[-1])
    last = dt.date.fromisoformat(days[-1])
    data: list[dict[str, Any]] = [
        {
            "type": "scatter",
            "mode": "lines+markers+text",
            "name": f"Used {hours}",
            "x": days,
            "y": used,
            "line": {"color": "#1f5fa8"},
            "marker": {"size": 8},
            # Drawn whole over the x axis: a day's use is small against the grant, and a
            # marker at y = 0 was half cut off by the plot's edge.
            "cliponaxis": False,
            # The figure itself beside the last point: against a 400-hour grant, 0.79 used is
            # a line on the axis; its number is what the reader wants.
            "text": [""] * (len(days) - 1) + [f"{rounded(total)} used"],
            "textposition": "top left" if (last - start) > (end - last) else "top right",
            "hovertemplate": "%{x|%d %b %Y}: %{y} " + hours + " used<extra></extra>",
        },
        {
            "type": "scatter",
            "mode": "lines",
            "name": f"Granted: {rounded(allocation.gpu_hours)} {hours}",
            "x": [start.isoformat(), end.isoformat()],
            "y": [_num(granted), _num(granted)],
            "line": {"color": "#444"},
        },
        {
            "type": "scatter",
            "mode": "lines",
            "name": "Even use to the end date",
            "x": [start.isoformat(), end.isoformat()],
            "y": [0, _num(granted)],
            "line": {"dash": "dot", "color": "#888"},
        },
    ]
    if run_out and start <= today < end:
        stop = min(run_out, end)
        now = used[-1]
        # A straight line from what is used today to the grant on the run-out date, cut at the
        # end date: beyond it the allocation is over anyway.
        at_stop = now + (granted - now) * (stop - today).days / max((run_out - today).days, 1)
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": PROJECTION_LABEL,
                "x": [today.isoformat(), stop.isoformat()],
                "y": [now, _num(min(at_stop, granted))],
                "line": {"dash": "dash", "color": "#c0392b"},
            }
        )
    return {
        "data": data,
        "layout": {
            **LAYOUT,
            "title": {"text": f"{hours} used against granted"},
            "xaxis": {
                **GRID,
                "type": "date",
                "range": _padded_dates(start, end),
                "tickformat": "%d %b",
                "hoverformat": "%d %b %Y",
                "nticks": 6,
            },
            "yaxis": {
                **GRID,
                "title": {"text": hours},
                "rangemode": "tozero",
                "range": [0, _num(max(granted, total) * 1.05) or 1],
            },
        },
    }


def _padded_dates(start: dt.date, end: dt.date) -> list[str]:
    """The burn-down's x range: the allocation's dates with a little room either side (4% of
    the span, at least half a day), so the first day's point is not drawn on the y axis."""
    pad = max((end - start) * 0.04, dt.timedelta(hours=12))
    first = dt.datetime.combine(start, dt.time()) - pad
    last = dt.datetime.combine(end, dt.time()) + pad
    return [first.isoformat(timespec="minutes"), last.isoformat(timespec="minutes")]


#: The daily chart spans at least this many days, so one day of use is a bar a seventh of the
#: plot wide, not one filling it.
DAILY_MIN_DAYS = 7


def daily_figure(allocation: Allocation, series: list[dict[str, Any]]) -> dict[str, Any]:
    """One bar per day with use over the allocation's days so far (its start to today, or to
    its end once it has ended), and at least the last DAILY_MIN_DAYS days: no axis past today,
    and each bar most of a day wide, so a single day of use is a bar, neither a hairline nor
    the plot's whole width. Days before the start (a young allocation's week) are shaded.
    Ticks fall on whole days whatever the span."""
    hours = _hours(allocation)
    days = [r["day"] for r in series]
    start = min([allocation.start_date] + days)
    end = max([min(allocation.end_date, timezone.localdate())] + days)
    first = min(start, end - dt.timedelta(days=DAILY_MIN_DAYS - 1))
    axis = day_axis(first, end)
    shapes, notes = [], []
    if first < allocation.start_date:
        before = dt.datetime.combine(allocation.start_date, dt.time()) - dt.timedelta(hours=12)
        shapes.append(
            {
                "type": "rect",
                "xref": "x",
                "yref": "paper",
                "x0": axis["range"][0],
                "x1": before.isoformat(),
                "y0": 0,
                "y1": 1,
                "fillcolor": "#f3f4f6",
                "line": {"width": 0},
                "layer": "below",
            }
        )
        if (allocation.start_date - first).days >= 3:  # room for the words, even on a phone
            left = dt.datetime.fromisoformat(axis["range"][0])
            middle = left + (before - left) / 2
            notes.append(
                {
                    "text": "before the allocation started",
                    "xref": "x",
                    "yref": "paper",
                    "x": middle.isoformat(timespec="minutes"),
                    "y": 0.5,
                    "showarrow": False,
                    "font": {"size": 11, "color": "#6b7280"},
                }
            )
    return {
        "data": [
            {
                "type": "bar",
                "name": hours,
                "x": [r["day"].isoformat() for r in series],
                "y": [_num(r["gpu_hours"]) for r in series],
                "width": [DAY_BAR_MS] * len(series),
                "marker": {"color": "#1f5fa8"},
                "hovertemplate": "%{x|%d %b %Y}: %{y} " + hours + "<extra></extra>",
            }
        ],
        "layout": {
            **LAYOUT,
            "title": {"text": "Daily usage"},
            "showlegend": False,
            "xaxis": axis,
            "yaxis": {**GRID, "title": {"text": hours}, "rangemode": "tozero"},
            "shapes": shapes,
            "annotations": notes,
        },
    }
