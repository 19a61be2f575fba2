"""Plotly figures for /recommend/ and /benchmarks/, as JSON for the locally served plotly.js.

Each figure has a text alternative on its page (the ranked table, or a data table).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go

from benchmarks.recommender import PRECISIONS
from core.charts import fitted_axis, not_enough_data

LAYOUT = dict(
    margin=dict(l=60, r=20, t=40, b=60),
    height=380,
    template="plotly_white",
    font=dict(family="system-ui, sans-serif", size=12),
)


TIME_COST_TITLE = "Time against cost per system"


def _json(fig: go.Figure) -> dict:
    return json.loads(fig.to_json())


def time_vs_cost(results: Sequence[Mapping[str, Any]]) -> dict:
    """Predicted time against cost per system; the Pareto front drawn as a line, its points
    labelled.

    Usable options (eligible, fitting) are blue, the rest grey; systems without a prediction
    are left out (the table says why), and with none left the figure says so in words. Both
    axes are fitted to the points with padding (core.charts.fitted_axis): linear unless the
    values span more than a decade.
    """

    def trace(rows: list[Mapping[str, Any]], name: str, **style: Any) -> go.Scatter:
        return go.Scatter(
            x=[r["predicted_hours"] for r in rows],
            y=[r["cost"] for r in rows],
            # The node type alone on the plot (short labels stay clear of each other at 390 px);
            # its facility in the hover, as in the ranked table.
            text=[r["node_type"] for r in rows],
            customdata=[r["facility"] for r in rows],
            name=name,
            hovertemplate="%{text} (%{customdata})<br>%{x:.3g} h, %{y:,.2f} USD<extra></extra>",
            **style,
        )

    known = [r for r in results if r["predicted_hours"] is not None and r["cost"] is not None]
    if not known:
        return not_enough_data(
            TIME_COST_TITLE,
            "no system has both a predicted time and a cost for this workload (the table says "
            "why).",
        )
    usable = [r for r in known if r["eligible"] and r["fits_memory"]]
    other = [r for r in known if not (r["eligible"] and r["fits_memory"])]
    front = sorted((r for r in usable if r["pareto"]), key=lambda r: r["predicted_hours"])
    # Axes fitted to the points, not to plotly's autorange (which also fits the front's text
    # labels, and ran the hours axis past 100 h for points between 0.16 and 0.5 h); log only
    # where the values span more than a decade; room above the top point for its label.
    xaxis = fitted_axis([float(r["predicted_hours"]) for r in known], pad=0.1)
    yaxis = fitted_axis([float(r["cost"]) for r in known], pad=0.1, top_pad=0.2)
    middle = _middle(xaxis)
    fig = go.Figure(
        [
            trace(
                other,
                "not usable (see table)",
                mode="markers",
                marker=dict(color="#afb8c1", size=9, symbol="x"),
            ),
            trace(
                usable, "eligible and fits", mode="markers", marker=dict(color="#0969da", size=10)
            ),
            trace(
                front,
                "Pareto front (nothing faster and cheaper)",
                mode="lines+markers+text",
                # Labels lean into the plot, away from the axes' tick numbers.
                textposition=[
                    "top right" if _coordinate(xaxis, r["predicted_hours"]) < middle else "top left"
                    for r in front
                ],
                line=dict(color="#bf3989", width=2),
                marker=dict(color="#bf3989", size=13, symbol="diamond"),
            ),
        ]
    )
    fig.update_layout(
        **LAYOUT,
        title=TIME_COST_TITLE,
        xaxis=dict(title=dict(text="predicted hours", standoff=8), automargin=True, **xaxis),
        yaxis=dict(title=dict(text="cost (USD)", standoff=8), automargin=True, **yaxis),
    )
    return _json(fig)


def _coordinate(axis: Mapping[str, Any], value: float) -> float:
    """`value` in the axis's own coordinates (log10 on a log axis, as plotly's range is)."""
    return math.log10(value) if axis["type"] == "log" and value > 0 else float(value)


def _middle(axis: Mapping[str, Any]) -> float:
    low, high = axis.get("range") or (0.0, 0.0)
    return (low + high) / 2


def throughput_per_precision(by_precision: Mapping[str, Mapping[str, float]]) -> dict:
    """Grouped bars: predicted samples/s per system, one bar per precision it supports."""
    systems = sorted({n for per in by_precision.values() for n in per})
    fig = go.Figure(
        [
            go.Bar(
                name=p,
                x=systems,
                y=[by_precision.get(p, {}).get(n) for n in systems],
                hovertemplate="%{x}: %{y:,.3g} samples/s<extra>" + p + "</extra>",
            )
            for p in PRECISIONS
            if by_precision.get(p)
        ]
    )
    fig.update_layout(
        **LAYOUT,
        barmode="group",
        title="Throughput per system per precision",
        yaxis=dict(title="samples/s (all GPUs)", type="log"),
        xaxis=dict(title="node type"),
    )
    return _json(fig)


def scaling(series: Sequence[Mapping[str, Any]]) -> dict:
    """Throughput against GPU count, one line per configuration, with ideal linear scaling."""
    fig = go.Figure()
    for s in series:
        fig.add_trace(
            go.Scatter(x=s["gpus"], y=s["throughput"], name=s["label"], mode="lines+markers")
        )
        base_g, base_t = s["gpus"][0], s["throughput"][0]
        fig.add_trace(
            go.Scatter(
                x=s["gpus"],
                y=[base_t * g / base_g for g in s["gpus"]],
                name=f"ideal: {s['label']}",
                mode="lines",
                showlegend=False,
                line=dict(dash="dot", color="#afb8c1"),
            )
        )
    fig.update_layout(
        **LAYOUT,
        title="Scaling with GPU count (dotted: linear)",
        xaxis=dict(title="GPUs", type="log", dtick=0.30102999566),
        yaxis=dict(title="samples/s (all GPUs)", type="log"),
    )
    return _json(fig)


def calibration(points: list[Any]) -> dict:
    """Predicted against measured hours of past jobs, one colour per node type and workload,
    with the diagonal where a perfect prediction would lie (log scales: short jobs matter)."""
    groups: dict[str, list[Any]] = {}
    for p in points:
        groups.setdefault(f"{p.node_type} · {p.workload}", []).append(p)
    fig = go.Figure(
        [
            go.Scatter(
                x=[p.measured_hours for p in ps],
                y=[p.predicted_hours for p in ps],
                text=[p.label for p in ps],
                name=name,
                mode="markers",
                hovertemplate="%{text}: measured %{x:.3g} h, predicted %{y:.3g} h<extra></extra>",
            )
            for name, ps in sorted(groups.items())
        ]
    )
    values = [v for p in points for v in (p.measured_hours, p.predicted_hours)]
    lo, hi = min(values) / 1.5, max(values) * 1.5
    fig.add_trace(
        go.Scatter(
            x=[lo, hi],
            y=[lo, hi],
            mode="lines",
            name="perfect prediction",
            line=dict(dash="dot", color="#afb8c1"),
        )
    )
    fig.update_layout(
        **LAYOUT,
        title="The recommender's predictions against what jobs took",
        xaxis=dict(title="measured hours (one run)", type="log"),
        yaxis=dict(title="predicted hours at launch", type="log"),
    )
    return _json(fig)
