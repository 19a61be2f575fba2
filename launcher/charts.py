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
                       "xaxis": {"title": {"text": "step"}, "tickformat": "d"}, "yaxis": {"title": {"text": "loss"}}}}


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


METRIC_LABELS = (("accuracy", "Accuracy"), ("precision", "Precision"), ("recall", "Recall (sensitivity)"),
                 ("specificity", "Specificity"), ("f1", "F1"), ("roc_auc", "ROC AUC"))
LEVELS = (("patient", "per patient"), ("slice", "per image"))


def metrics_panel(job: Job) -> dict[str, Any] | None:
    """What the job page's metrics panel shows, from the trainer's metrics.json: each metric per
    patient and per image with its 95% bootstrap interval, the confusion matrices, the basis."""
    m = job.metrics or {}
    if not isinstance(m.get("patient"), dict):
        return None
    levels = [(key, label) for key, label in LEVELS if isinstance(m.get(key), dict)]
    rows = [{"name": name, "label": label,
             "cells": [(m[key].get(name) or {}) if isinstance(m[key].get(name), dict) else {}
                       for key, _ in levels]} for name, label in METRIC_LABELS]
    confusion = [{"level": label, "n": m[key].get("n"), **(m[key].get("confusion_matrix") or {})}
                 for key, label in levels if m[key].get("confusion_matrix")]
    boot = m.get("bootstrap") or {}
    return {"levels": [label for _, label in levels], "rows": rows, "confusion": confusion,
            "evaluated_on": m.get("evaluated_on", "val"), "samples": m.get("samples") or {},
            "resamples": boot.get("resamples"), "method": boot.get("method", "percentile"),
            "threshold": m.get("threshold"), "best_epoch": m.get("best_epoch"),
            "epochs_run": m.get("epochs_run"), "loss": m.get("loss")}


def roc_figure(job: Job) -> dict[str, Any] | None:
    """The ROC curve per patient and per image, with the chance diagonal."""
    m = job.metrics or {}
    data = []
    for key, label in LEVELS:
        level = m.get(key) if isinstance(m.get(key), dict) else {}
        roc = level.get("roc") or {}
        auc = (level.get("roc_auc") or {}).get("value") if isinstance(level.get("roc_auc"), dict) else None
        if roc.get("fpr") and roc.get("tpr"):
            name = f"{label}" + (f" (AUC {auc:.3f})" if isinstance(auc, (int, float)) else "")
            data.append({"type": "scatter", "mode": "lines", "name": name, "x": roc["fpr"], "y": roc["tpr"],
                         "line": {"shape": "hv"}})
    if not data:
        return None
    data.append({"type": "scatter", "mode": "lines", "name": "chance", "x": [0, 1], "y": [0, 1],
                 "line": {"dash": "dot", "color": "#8c959f"}})
    return {"data": data, "layout": {"title": {"text": "ROC curve"}, "height": 340,
                                     "margin": {"l": 50, "r": 20, "t": 40, "b": 40},
                                     "legend": {"x": 0.45, "y": 0.08, "bgcolor": "rgba(255,255,255,0.8)"},
                                     "xaxis": {"title": {"text": "false positive rate"}, "range": [0, 1]},
                                     "yaxis": {"title": {"text": "true positive rate"}, "range": [0, 1.02]}}}
