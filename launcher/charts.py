"""Plotly figures (as JSON-able dicts) for the job and sweep pages; drawn by static/js."""
from __future__ import annotations

from typing import Any

from .models import Job


def loss_figure(job: Job) -> dict[str, Any]:
    history = (job.progress or {}).get("history") or []
    return {"data": [{"type": "scatter", "mode": "lines+markers", "name": "training loss",
                      "x": [p[0] for p in history], "y": [p[1] for p in history]}],
            "layout": {"title": {"text": "Training loss"}, "height": 300,
                       "margin": {"l": 50, "r": 20, "t": 40, "b": 40},
                       "xaxis": {"title": {"text": "step"}}, "yaxis": {"title": {"text": "loss"}}}}


def leaderboard_figure(rows: list[dict[str, Any]], metric: str, top: int = 20) -> dict[str, Any]:
    """Mean cross-validated `metric` per combination with its 95% interval, best first."""
    shown = [r for r in rows if r[metric]["mean"] is not None][:top]
    labels = [f"{r['model']} lr={r['lr']:g} step={r['lr_step']} wd={r['weight_decay']:g}" for r in shown]
    means = [r[metric]["mean"] for r in shown]
    plus = [(r[metric]["ci"][1] - r[metric]["mean"]) if r[metric]["ci"] else 0 for r in shown]
    minus = [(r[metric]["mean"] - r[metric]["ci"][0]) if r[metric]["ci"] else 0 for r in shown]
    return {"data": [{"type": "bar", "x": labels, "y": means, "name": metric,
                      "error_y": {"type": "data", "symmetric": False, "array": plus,
                                  "arrayminus": minus}}],
            "layout": {"title": {"text": f"Mean {metric} over folds (95% interval)"}, "height": 360,
                       "margin": {"l": 50, "r": 20, "t": 40, "b": 120}}}
