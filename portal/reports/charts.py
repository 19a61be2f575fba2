"""Plotly figures for the usage report, as JSON for the locally served plotly.js."""

from __future__ import annotations

import json

import plotly.graph_objects as go

from core.charts import not_enough_data

from .selectors import Report
from .tables import GROUP_LABELS, size_word

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


#: The usage chart's series at most: one a group, those with the most hours.
SERIES = 20

#: A category axis shows room for at least this many bars: one period (a PI's first month) is
#: a bar a quarter of the plot wide, centred, not one filling it.
MIN_CATEGORIES = 4


def _category_range(count: int) -> list[float]:
    """The x range of `count` categories, widened symmetrically to MIN_CATEGORIES."""
    extra = max(MIN_CATEGORIES - count, 0) / 2
    return [-0.5 - extra, count - 0.5 + extra]


def usage_figure(report: Report) -> dict:
    """GPU-hours per group and period, stacked; before anything is charged in the report's
    scope (rows of jobs that charged nothing yet) a sentence instead of bars of 0 on a -1..1
    axis."""
    title = f"{report.unit_label} by {GROUP_LABELS[report.group_by].lower()} and {report.period}"
    if not any(row["gpu_seconds"] > 0 for row in report.rows):
        return not_enough_data(
            title,
            "no job or notebook in this report has been charged. "
            f"{title} show from the first charge.",
        )
    by_group: dict[str, tuple[list, list]] = {}
    for row in report.rows:
        xs, ys = by_group.setdefault(row["group"], ([], []))
        xs.append(_label(row["period"], report.period))
        ys.append(row["gpu_hours"])
    periods = {x for xs, _ in by_group.values() for x in xs}
    # The SERIES groups with the most hours (report.groups' order), not the first by name.
    drawn = [g["group"] for g in report.groups if g["group"] in by_group][:SERIES]
    if len(by_group) > SERIES:
        title += f" (the {SERIES} with the most)"
    usage = go.Figure()
    for group in drawn:
        xs, ys = by_group[group]
        usage.add_bar(x=xs, y=ys, name=group)
    usage.update_layout(title=title, yaxis_title=report.unit_label, **LAYOUT)
    usage.update_xaxes(
        type="category", categoryorder="category ascending", range=_category_range(len(periods))
    )
    usage.update_yaxes(rangemode="tozero")
    return json.loads(usage.to_json())


def sizes_figure(report: Report) -> dict:
    """Jobs per size (GPUs, or CPUs on facilities without GPUs); a sentence before any job has
    run in the report's scope."""
    many = size_word(report.unit_label)
    title = f"Jobs by size ({many})"
    if not any(s["jobs"] for s in report.sizes):
        return not_enough_data(
            title, "no job in this report has been launched. Jobs by size show from the first."
        )
    sizes = go.Figure()
    sizes.add_bar(
        x=[str(s["gpus"]) for s in report.sizes], y=[s["jobs"] for s in report.sizes], name="Jobs"
    )
    sizes.update_layout(title=title, xaxis_title=many, yaxis_title="Jobs", **LAYOUT)
    sizes.update_xaxes(type="category", range=_category_range(len(report.sizes)))
    # Jobs are whole: whole-number ticks, one a job while there are few.
    few = max(s["jobs"] for s in report.sizes) <= 5
    sizes.update_yaxes(rangemode="tozero", tickformat=",d", tick0=0, dtick=1 if few else None)
    return json.loads(sizes.to_json())


def report_charts(report: Report) -> dict:
    """The report page's two figures, as JSON for plotly.js."""
    return {"usage": usage_figure(report), "sizes": sizes_figure(report)}
