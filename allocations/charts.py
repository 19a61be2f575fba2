"""Plotly figures for allocation pages, as JSON for the locally served plotly.js."""
from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import plotly.graph_objects as go
from django.db.models import Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from .models import Allocation, UsageRecord

LAYOUT = dict(margin=dict(l=50, r=20, t=40, b=40), height=320, template="plotly_white",
              font=dict(family="system-ui, sans-serif", size=12))


def daily_usage(allocation: Allocation) -> list[dict]:
    """GPU-hours and cost per day, summed in SQL, with the instance type where known."""
    rows = (UsageRecord.objects.filter(allocation=allocation)
            .annotate(day=TruncDate("period_start")).values("day")
            .annotate(gpu_seconds=Sum("gpu_seconds"), cost=Sum("cost")).order_by("day"))
    return [{"day": r["day"], "gpu_hours": r["gpu_seconds"] / 3600, "cost": float(r["cost"])}
            for r in rows]


def forecast_run_out(allocation: Allocation, series: list[dict], used: float) -> dt.date | None:
    """The day the grant runs out at the average burn rate of the last 14 days of use."""
    recent = [row for row in series if row["day"] >= timezone.localdate() - dt.timedelta(days=14)]
    rate = sum(row["gpu_hours"] for row in recent) / 14 if recent else 0.0
    remaining = float(allocation.gpu_hours) - used
    if rate <= 0 or remaining <= 0:
        return None
    return timezone.localdate() + dt.timedelta(days=int(remaining / rate) + 1)


def allocation_charts(allocation: Allocation) -> dict:
    series = daily_usage(allocation)
    used = float(getattr(allocation, "gpu_hours_used", Decimal(0)))
    run_out = forecast_run_out(allocation, series, used)
    return {
        "burn_down": json.loads(_burn_down(allocation, series, run_out).to_json()),
        "daily": json.loads(_daily(series).to_json()),
        "run_out": run_out,
        "has_usage": bool(series),
    }


def _burn_down(allocation: Allocation, series: list[dict], run_out: dt.date | None) -> go.Figure:
    granted = float(allocation.gpu_hours)
    days, remaining, left = [allocation.start_date], [granted], granted
    for row in series:
        left -= row["gpu_hours"]
        days.append(row["day"])
        remaining.append(max(left, 0.0))
    fig = go.Figure()
    fig.add_scatter(x=days, y=remaining, mode="lines+markers", name="Remaining GPU-hours")
    fig.add_scatter(x=[allocation.start_date, allocation.end_date], y=[granted, 0], mode="lines",
                    name="Even use to the end date", line=dict(dash="dot", color="#888"))
    if run_out:
        fig.add_scatter(x=[days[-1], run_out], y=[remaining[-1], 0], mode="lines",
                        name=f"Forecast: runs out {run_out:%d %b %Y}",
                        line=dict(dash="dash", color="#c0392b"))
    fig.update_layout(title="Burn-down", yaxis_title="GPU-hours", **LAYOUT)
    return fig


def _daily(series: list[dict]) -> go.Figure:
    fig = go.Figure()
    fig.add_bar(x=[r["day"] for r in series], y=[round(r["gpu_hours"], 3) for r in series],
                name="GPU-hours")
    fig.update_layout(title="Daily usage", yaxis_title="GPU-hours", **LAYOUT)
    return fig
