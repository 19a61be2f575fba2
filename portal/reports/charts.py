"""Plotly figures for the usage report, as JSON for the locally served plotly.js."""

from __future__ import annotations

import json

import plotly.graph_objects as go

from .selectors import Report
from .tables import GROUP_LABELS

LAYOUT = dict(
    margin=dict(l=50, r=20, t=40, b=40),
    height=320,
    template="plotly_white",
    font=dict(family="system-ui, sans-serif", size=12),
    barmode="stack",
)


def _label(period, kind: str) -> str:
    """Periods as categories ("2026-11", "2026-W47"), not instants on a time axis."""
    if period is None:
        return "-"
    if kind == "week":
        year, week, _ = period.isocalendar()
        return f"{year}-W{week:02d}"
    return period.strftime("%Y-%m")


def report_charts(report: Report) -> dict:
    by_group: dict[str, tuple[list, list]] = {}
    for row in report.rows:
        xs, ys = by_group.setdefault(row["group"], ([], []))
        xs.append(_label(row["period"], report.period))
        ys.append(row["gpu_hours"])
    usage = go.Figure()
    for group, (xs, ys) in list(by_group.items())[:20]:
        usage.add_bar(x=xs, y=ys, name=group)
    usage.update_layout(
        title=f"GPU-hours by {GROUP_LABELS[report.group_by].lower()} and {report.period}",
        yaxis_title="GPU-hours",
        **LAYOUT,
    )
    usage.update_xaxes(type="category", categoryorder="category ascending")
    sizes = go.Figure()
    sizes.add_bar(
        x=[str(s["gpus"]) for s in report.sizes], y=[s["jobs"] for s in report.sizes], name="Jobs"
    )
    sizes.update_layout(
        title="Jobs by size (GPUs)", xaxis_title="GPUs", yaxis_title="Jobs", **LAYOUT
    )
    sizes.update_xaxes(type="category")
    return {"usage": json.loads(usage.to_json()), "sizes": json.loads(sizes.to_json())}
