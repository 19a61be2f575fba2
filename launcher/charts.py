"""Plotly figures (as JSON-able dicts) for the job and sweep pages; drawn by static/js."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from statistics import fmean
from typing import Any

from core.charts import GRID, LAYOUT

from .models import Job
from .sweepgrid import AXES, combo_label


def loss_figure(job: Job) -> dict[str, Any]:
    history = (job.progress or {}).get("history") or []
    return {
        "data": [
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": "training loss",
                "x": [p[0] for p in history],
                "y": [p[1] for p in history],
            }
        ],
        "layout": {
            "title": {"text": "Training loss"},
            "height": 300,
            "margin": {"l": 50, "r": 20, "t": 40, "b": 40},
            "xaxis": {"title": {"text": "step"}, "tickformat": "d"},
            "yaxis": {"title": {"text": "loss"}},
        },
    }


def leaderboard_figure(rows: list[dict[str, Any]], metric: str, top: int = 20) -> dict[str, Any]:
    """Mean cross-validated `metric` per combination with its 95% interval, best first."""
    shown = [r for r in rows if r[metric]["mean"] is not None][:top]
    labels = [
        f"{r['model']} lr={r['lr']:g} step={r['lr_step']} wd={r['weight_decay']:g}" for r in shown
    ]
    means = [r[metric]["mean"] for r in shown]
    plus = [(r[metric]["ci"][1] - r[metric]["mean"]) if r[metric]["ci"] else 0 for r in shown]
    minus = [(r[metric]["mean"] - r[metric]["ci"][0]) if r[metric]["ci"] else 0 for r in shown]
    return {
        "data": [
            {
                "type": "bar",
                "x": labels,
                "y": means,
                "name": metric,
                "error_y": {"type": "data", "symmetric": False, "array": plus, "arrayminus": minus},
            }
        ],
        "layout": {
            "title": {"text": f"Mean {metric} over folds (95% interval)"},
            "height": 360,
            "margin": {"l": 50, "r": 20, "t": 40, "b": 120},
            # A metric lies in [0, 1], and so does its interval. Fewer than FEW bars keep a
            # bar's width: one combination was one bar across the whole chart.
            "yaxis": {"title": {"text": metric}, "range": [0, 1.02]},
            "xaxis": {"range": _category_range(len(labels))},
        },
    }


#: Bars a category axis is laid out for at least: fewer keep this share of the width each.
FEW = 5


def _category_range(n: int) -> list[float]:
    """A category axis's range holding `n` bars centred, as wide as FEW would be."""
    pad = max(FEW - n, 0) / 2
    return [-0.5 - pad, n - 0.5 + pad]


METRIC_LABELS = (
    ("accuracy", "Accuracy"),
    ("precision", "Precision"),
    ("recall", "Recall (sensitivity)"),
    ("specificity", "Specificity"),
    ("f1", "F1"),
    ("roc_auc", "ROC AUC"),
)
LEVELS = (("patient", "per patient"), ("slice", "per image"))


def metrics_panel(job: Job) -> dict[str, Any] | None:
    """What the job page's metrics panel shows, from the trainer's metrics.json: each metric per
    patient and per image with its 95% bootstrap interval, the confusion matrices, the basis."""
    m = job.metrics or {}
    if not isinstance(m.get("patient"), dict):
        return None
    levels = [(key, label) for key, label in LEVELS if isinstance(m.get(key), dict)]
    rows = [
        {
            "name": name,
            "label": label,
            "cells": [
                (m[key].get(name) or {}) if isinstance(m[key].get(name), dict) else {}
                for key, _ in levels
            ],
        }
        for name, label in METRIC_LABELS
    ]
    confusion = [
        {"level": label, "n": m[key].get("n"), **(m[key].get("confusion_matrix") or {})}
        for key, label in levels
        if m[key].get("confusion_matrix")
    ]
    boot = m.get("bootstrap") or {}
    return {
        "levels": [label for _, label in levels],
        "rows": rows,
        "confusion": confusion,
        "evaluated_on": m.get("evaluated_on", "val"),
        "samples": m.get("samples") or {},
        "resamples": boot.get("resamples"),
        "method": boot.get("method", "percentile"),
        "threshold": m.get("threshold"),
        "best_epoch": m.get("best_epoch"),
        "epochs_run": m.get("epochs_run"),
        "loss": m.get("loss"),
    }


def roc_figure(job: Job) -> dict[str, Any] | None:
    """The ROC curve per patient and per image, with the chance diagonal."""
    m = job.metrics or {}
    data = []
    for key, label in LEVELS:
        found = m.get(key)
        level = found if isinstance(found, dict) else {}
        roc = level.get("roc") or {}
        auc = (
            (level.get("roc_auc") or {}).get("value")
            if isinstance(level.get("roc_auc"), dict)
            else None
        )
        if roc.get("fpr") and roc.get("tpr"):
            name = f"{label}" + (f" (AUC {auc:.3f})" if isinstance(auc, (int, float)) else "")
            data.append(
                {
                    "type": "scatter",
                    "mode": "lines",
                    "name": name,
                    "x": roc["fpr"],
                    "y": roc["tpr"],
                    "line": {"shape": "hv"},
                }
            )
    if not data:
        return None
    data.append(
        {
            "type": "scatter",
            "mode": "lines",
            "name": "chance",
            "x": [0, 1],
            "y": [0, 1],
            "line": {"dash": "dot", "color": "#8c959f"},
        }
    )
    return {
        "data": data,
        "layout": {
            "title": {"text": "ROC curve"},
            "height": 340,
            "margin": {"l": 50, "r": 20, "t": 40, "b": 40},
            "legend": {"x": 0.45, "y": 0.08, "bgcolor": "rgba(255,255,255,0.8)"},
            "xaxis": {"title": {"text": "false positive rate"}, "range": [0, 1]},
            "yaxis": {"title": {"text": "true positive rate"}, "range": [0, 1.02]},
        },
    }


def _cell_epochs(cell: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """A cell's finished epochs' validation results, where launcher/services/sweeps.py reads
    them: progress.json's `epoch_metrics` while it runs, metrics.json's `history` once it has
    finished (each entry {"epoch": n, "val_loss": x, "val": {metric: value}})."""
    progress = cell.get("progress") or {}
    found = (
        cell.get("epoch_metrics")
        or (progress.get("epoch_metrics") if isinstance(progress, Mapping) else None)
        or cell.get("history")
        or []
    )
    if not isinstance(found, list):
        return []
    return [
        e
        for e in found
        if isinstance(e, Mapping) and isinstance(e.get("epoch"), int) and e["epoch"] >= 1
    ]


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _config_name(params: Mapping[str, Any]) -> str:
    """A configuration as leaderboard_figure labels it: "resnet18 lr=0.01 step=5 wd=0.0001"."""

    def g(value: Any) -> str:
        return f"{value:g}" if isinstance(value, (int, float)) else str(value)

    return (
        f"{params.get('model')} lr={g(params.get('lr'))} step={params.get('lr_step')} "
        f"wd={g(params.get('weight_decay'))}"
    )


#: Beyond this many configurations the legend would bury the plot: names show on hover only.
EPOCHS_LEGEND_MAX = 12


def sweep_epochs_figure(
    cells: Iterable[Mapping[str, Any]], schedule: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The early-stopping sweep's validation `schedule["metric"]` per configuration over epochs:
    one line per configuration, the mean over its folds at each epoch they reached; the rungs as
    dashed vertical lines ("rung 1 (epoch 1)"); configurations stopped early dimmer and dashed.

    cells: plain data, each {"params": the cell's params, "epoch_metrics": its progress's
    `epoch_metrics` (or the whole "progress"), and optionally "history": its metrics.json
    history}. `schedule`: sweep_selectors.sweep_schedule's dict. None when fewer than two
    distinct epochs have a value (no curve yet: the page says so)."""
    metric = str(schedule.get("metric") or "accuracy")
    epochs = int(schedule.get("epochs") or 1)
    rungs = [int(e) for e in schedule.get("rungs") or []]
    stopped: dict[str, Any] = {}
    for config in schedule.get("configurations") or []:
        params = config.get("configuration") or {}
        if config.get("stopped_at_rung") is not None and all(a in params for a in AXES):
            stopped[combo_label(params)] = config.get("stopped_at_epoch")
    # label -> (params, {epoch: [fold values]}), in the cells' order.
    groups: dict[str, tuple[Mapping[str, Any], dict[int, list[float]]]] = {}
    for cell in cells:
        params = cell.get("params") or {}
        if not all(a in params for a in AXES):
            continue
        _, per_epoch = groups.setdefault(combo_label(params), (params, {}))
        for entry in _cell_epochs(cell):
            value = _number((entry.get("val") or {}).get(metric))
            if value is not None:
                per_epoch.setdefault(entry["epoch"], []).append(value)
    seen = {e for _, per_epoch in groups.values() for e in per_epoch}
    if len(seen) < 2:
        return None
    data = []
    for label, (params, per_epoch) in groups.items():
        if not per_epoch:
            continue
        xs = sorted(per_epoch)
        name = _config_name(params)
        trace: dict[str, Any] = {
            "type": "scatter",
            "mode": "lines+markers",
            "name": name,
            "x": xs,
            "y": [round(fmean(per_epoch[e]), 6) for e in xs],
            "customdata": [len(per_epoch[e]) for e in xs],
            "hovertemplate": f"{name}<br>epoch %{{x}}: %{{y:.3f}} "
            "(mean of %{customdata} fold(s))<extra></extra>",
        }
        if label in stopped:
            at = stopped[label]
            trace["name"] = f"{name} (stopped)"
            trace["hovertemplate"] = trace["hovertemplate"].replace(
                "<extra>", f"<br>stopped early{f' at epoch {at}' if at else ''}<extra>"
            )
            trace["opacity"] = 0.45
            trace["line"] = {"dash": "dash", "width": 1.5}
            trace["marker"] = {"size": 5}
        data.append(trace)
    named = dict(METRIC_LABELS).get(metric, metric)
    named = named if metric in ("f1", "roc_auc") else named.lower()
    span = max(epochs, max(seen))
    pad = max(0.1, span * 0.02)  # the markers on epoch 1 and the last epoch drawn whole
    return {
        "data": data,
        "layout": {
            **LAYOUT,
            "title": {"text": f"Validation {named} by epoch"},
            "height": 360,
            "showlegend": len(data) <= EPOCHS_LEGEND_MAX,
            "legend": {"orientation": "h", "x": 0, "y": -0.22, "yanchor": "top"},
            "xaxis": {
                **GRID,
                "title": {"text": "epoch", "standoff": 4},
                "range": [1 - pad, span + pad],
                "tickformat": "d",
                "tick0": 1 if span <= 12 else 0,
                "dtick": max(1, math.ceil(span / 10)) if span > 12 else 1,
            },
            "yaxis": {**GRID, "title": {"text": f"validation {named}"}, "range": [0, 1]},
            "shapes": [
                {
                    "type": "line",
                    "xref": "x",
                    "yref": "paper",
                    "x0": epoch,
                    "x1": epoch,
                    "y0": 0,
                    "y1": 1,
                    "line": {"dash": "dash", "color": "#8c959f", "width": 1},
                }
                for epoch in rungs
            ],
            "annotations": [
                {
                    "xref": "x",
                    "yref": "paper",
                    "x": epoch,
                    "y": 1,
                    "text": f"rung {i} (epoch {epoch})",
                    "showarrow": False,
                    "textangle": -90,
                    "xanchor": "left",
                    "yanchor": "top",
                    "xshift": 2,
                    "font": {"size": 11, "color": "#57606a"},
                }
                for i, epoch in enumerate(rungs, 1)
            ],
        },
    }
