"""Chart data for allocation pages: plain plotly.js figures (dicts), drawn by the locally served
plotly.js (static/js/charts.js).

Built as plain dicts, not `plotly.graph_objects` figures: the server-side figure classes validate
and deep-copy every property, which cost about 70 ms a page view (docs/performance.md); the
browser's plotly.js needs only the JSON.

Axes are bounded by what the numbers mean: the burn-down runs from the allocation's start date
to its end date (a forecast that runs past the end is cut there and said in words), GPU-hours
never go below zero, and the daily chart has one tick per day.
"""
from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from django.core.cache import cache
from django.db.models import Sum
from django.db.models.functions import TruncDate
from django.utils import timezone
from django.utils.html import format_html, json_script

from .models import Allocation, UsageRecord
from .versions import fragment_key

# A forecast from fewer days of use than this says nothing about the rate.
MIN_FORECAST_DAYS = 3
FORECAST_WINDOW_DAYS = 14
ONE_DAY_MS = 86_400_000
DAY_BAR_MS = ONE_DAY_MS * 0.8  # a day's bar: most of the day, a gap between days

LAYOUT: dict[str, Any] = {"margin": {"l": 56, "r": 16, "t": 40, "b": 48}, "height": 320,
                          "font": {"family": "system-ui, sans-serif", "size": 12},
                          "paper_bgcolor": "#fff", "plot_bgcolor": "#fff",
                          "legend": {"orientation": "h", "y": -0.2}}
GRID = {"gridcolor": "#e5e7eb", "zeroline": False}


def daily_usage(allocation: Allocation) -> list[dict[str, Any]]:
    """GPU-hours and cost per day, summed in SQL (one query)."""
    rows = (UsageRecord.objects.filter(allocation_id=allocation.pk)
            .annotate(day=TruncDate("period_start")).values("day")
            .annotate(gpu_seconds=Sum("gpu_seconds"), cost=Sum("cost")).order_by("day"))
    return [{"day": r["day"], "gpu_hours": r["gpu_seconds"] / 3600, "cost": float(r["cost"])}
            for r in rows]


def forecast_days(allocation: Allocation, today: dt.date) -> int:
    """The days the forecast's rate is averaged over: the last FORECAST_WINDOW_DAYS days
    (today included), or the days the allocation has existed in them (from its start date),
    at least 1. A 3-day-old allocation's rate is its use / 3, not / 14."""
    since = today - dt.timedelta(days=FORECAST_WINDOW_DAYS - 1)
    return max(1, (today - max(since, allocation.start_date)).days + 1)


def forecast_run_out(allocation: Allocation, series: list[dict[str, Any]],
                     used: float) -> dt.date | None:
    """The day the grant runs out at the average daily burn over `forecast_days` (the last
    14 days, or fewer for a younger allocation), or None when there is no basis: fewer than
    MIN_FORECAST_DAYS days with use in that window, nothing left, or no use at all."""
    today = timezone.localdate()
    since = today - dt.timedelta(days=FORECAST_WINDOW_DAYS - 1)
    recent = [row for row in series if row["day"] >= since and row["gpu_hours"] > 0]
    if len(recent) < MIN_FORECAST_DAYS:
        return None
    rate = sum(row["gpu_hours"] for row in recent) / forecast_days(allocation, today)
    remaining = float(allocation.gpu_hours) - used
    if rate <= 0 or remaining <= 0:
        return None
    return today + dt.timedelta(days=int(remaining / rate) + 1)


def allocation_charts(allocation: Allocation) -> dict[str, Any]:
    """Everything the allocation page's usage card shows: two figures, the forecast (or why
    there is none) and whether any usage exists."""
    series = daily_usage(allocation)
    used = float(getattr(allocation, "gpu_hours_used", Decimal(0)) or 0)
    run_out = forecast_run_out(allocation, series, used)
    return {
        "burn_down": burn_down_figure(allocation, series, run_out),
        "daily": daily_figure(allocation, series),
        "run_out": run_out,
        "run_out_after_end": bool(run_out and run_out > allocation.end_date),
        "forecast_basis_days": MIN_FORECAST_DAYS,
        "forecast_rate_days": forecast_days(allocation, timezone.localdate()),
        "has_usage": bool(series),
    }


def cached_allocation_charts(allocation: Allocation) -> dict[str, Any]:
    """`allocation_charts`, read from the cache while nothing it is made of has changed. Its
    key holds the project's version (every charge and reservation moves the ledger columns,
    which bumps it, as does every audited change to the allocation: versions.py), today's date
    (the forecast and the daily chart's last day), and the allocation's own figures the charts
    draw (grant, dates, charged seconds, spend), so a charge shows on the next view even if a
    writer missed the bump."""
    key = "allocation-charts:" + fragment_key(
        allocation.pk, timezone.localdate(), allocation.gpu_hours, allocation.start_date,
        allocation.end_date, allocation.gpu_seconds_used, allocation.spend,
        project_ids=[allocation.project_id])
    charts = cache.get(key)
    if charts is None:
        charts = allocation_charts(allocation)
        # The figures as the page's <script type="application/json"> elements, serialised once.
        charts["scripts"] = format_html("{}\n{}", json_script(charts["burn_down"], "burn-down-data"),
                                        json_script(charts["daily"], "daily-data"))
        cache.set(key, charts, timeout=3600)
    return charts


def _num(value: float) -> float:
    """Compact JSON: 6 significant digits is far below what a chart can show."""
    return float(f"{value:.6g}")


def burn_down_figure(allocation: Allocation, series: list[dict[str, Any]],
                     run_out: dt.date | None) -> dict[str, Any]:
    granted = float(allocation.gpu_hours)
    start, end = allocation.start_date, allocation.end_date
    days, remaining, left = [start.isoformat()], [_num(granted)], granted
    for row in series:
        left -= row["gpu_hours"]
        day = min(max(row["day"], start), end)
        days.append(day.isoformat())
        remaining.append(_num(max(left, 0.0)))
    data: list[dict[str, Any]] = [
        {"type": "scatter", "mode": "lines+markers", "name": "Remaining GPU-hours",
         "x": days, "y": remaining, "line": {"color": "#1f5fa8"}},
        {"type": "scatter", "mode": "lines", "name": "Even use to the end date",
         "x": [start.isoformat(), end.isoformat()], "y": [_num(granted), 0],
         "line": {"dash": "dot", "color": "#888"}},
    ]
    if run_out:
        # Cut the forecast line at the end date: beyond it the allocation is over anyway.
        last_day = dt.date.fromisoformat(days[-1])
        stop = min(run_out, end)
        span = (run_out - last_day).days or 1
        at_stop = remaining[-1] * max((run_out - stop).days, 0) / span
        label = (f"Forecast: runs out {run_out:%d %b %Y}" if run_out <= end
                 else "Forecast: hours left at the end date")
        data.append({"type": "scatter", "mode": "lines", "name": label,
                     "x": [days[-1], stop.isoformat()], "y": [remaining[-1], _num(at_stop)],
                     "line": {"dash": "dash", "color": "#c0392b"}})
    return {"data": data, "layout": {
        **LAYOUT, "title": {"text": "Burn-down"},
        "xaxis": {**GRID, "type": "date", "range": [start.isoformat(), end.isoformat()],
                  "tickformat": "%d %b", "hoverformat": "%d %b %Y", "nticks": 6},
        "yaxis": {**GRID, "title": {"text": "GPU-hours"}, "rangemode": "tozero",
                  "range": [0, _num(granted * 1.05) or 1]},
    }}


def daily_figure(allocation: Allocation, series: list[dict[str, Any]]) -> dict[str, Any]:
    """One bar per day with use over the allocation's days so far (its start to today, or to
    its end once it has ended): no axis past today, and each bar most of a day wide, so a single
    day of use is a bar, not a hairline. Ticks fall on whole days whatever the span."""
    days = [r["day"] for r in series]
    start = min([allocation.start_date] + days)
    end = max([min(allocation.end_date, timezone.localdate())] + days)
    return {"data": [{"type": "bar", "name": "GPU-hours",
                      "x": [r["day"].isoformat() for r in series],
                      "y": [_num(r["gpu_hours"]) for r in series],
                      "width": [DAY_BAR_MS] * len(series),
                      "marker": {"color": "#1f5fa8"},
                      "hovertemplate": "%{x|%d %b %Y}: %{y} GPU-hours<extra></extra>"}],
            "layout": {
                **LAYOUT, "title": {"text": "Daily usage"}, "showlegend": False,
                "xaxis": day_axis(start, end),
                "yaxis": {**GRID, "title": {"text": "GPU-hours"}, "rangemode": "tozero"},
            }}


def day_axis(start: dt.date, end: dt.date) -> dict[str, Any]:
    """A date axis for bars of one day each, `start` to `end` inclusive: ticks on whole days
    only (every day, or every n-th day so that about ten show), labelled once each, and half a
    day of margin either side so the first and last bars are whole. Left to itself plotly puts
    ticks every 12 hours over a day or two and labels each with its date ("26 Nov, 26 Nov,
    27 Nov")."""
    half_day = dt.timedelta(hours=12)
    span_days = (end - start).days + 1
    return {**GRID, "type": "date", "tickformat": "%d %b",
            "dtick": ONE_DAY_MS * max(1, span_days // 10),
            "range": [(dt.datetime.combine(start, dt.time()) - half_day).isoformat(),
                      (dt.datetime.combine(end, dt.time()) + half_day).isoformat()]}
