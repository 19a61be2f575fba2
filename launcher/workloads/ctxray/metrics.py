"""Binary classification metrics with bootstrap 95% intervals, per slice and per patient.

Conventions match scikit-learn: the positive class is 1, a ratio with an empty denominator is 0,
ROC AUC is undefined (None) when only one class is present. Intervals are percentile bootstrap
intervals: resample the evaluated samples (slices, or patients) with replacement, recompute.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

METRICS = ("accuracy", "precision", "recall", "specificity", "f1", "roc_auc")
MAX_ROC_POINTS = 500


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    return np.divide(num, den, out=np.zeros(np.shape(num), dtype=np.float64), where=den > 0)


def _from_counts(
    tp: np.ndarray, fp: np.ndarray, tn: np.ndarray, fn: np.ndarray
) -> dict[str, np.ndarray]:
    """Threshold metrics from confusion counts; works on scalars and on arrays of resamples."""
    precision = _ratio(tp, tp + fp)
    recall = _ratio(tp, tp + fn)
    return {
        "accuracy": _ratio(tp + tn, tp + fp + tn + fn),
        "precision": precision,
        "recall": recall,
        "specificity": _ratio(tn, tn + fp),
        "f1": _ratio(2 * tp, 2 * tp + fp + fn),
    }


def _counts(y: np.ndarray, pred: np.ndarray, axis: int | None = None) -> tuple[np.ndarray, ...]:
    tp = np.sum(y & pred, axis=axis)
    fp = np.sum(~y & pred, axis=axis)
    tn = np.sum(~y & ~pred, axis=axis)
    fn = np.sum(y & ~pred, axis=axis)
    return tp, fp, tn, fn


def roc_auc(y: np.ndarray, score: np.ndarray) -> float | None:
    """Area under the ROC curve (Mann-Whitney U with average ranks for ties); None if one class."""
    y = np.asarray(y).astype(bool)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        return None
    _, inverse, counts = np.unique(score, return_inverse=True, return_counts=True)
    average_rank = np.cumsum(counts) - (counts - 1) / 2.0
    ranks = average_rank[inverse]
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def roc_points(y: np.ndarray, score: np.ndarray) -> dict[str, list]:
    """ROC curve at every distinct score (thinned to MAX_ROC_POINTS), from (0, 0) to (1, 1).
    The first threshold is None (above every score: nothing predicted positive)."""
    y = np.asarray(y).astype(bool)
    order = np.argsort(-np.asarray(score), kind="mergesort")
    s, ys = np.asarray(score)[order], y[order]
    last_of_group = np.r_[np.flatnonzero(np.diff(s)), len(s) - 1]
    tps = np.cumsum(ys)[last_of_group]
    fps = (last_of_group + 1) - tps
    fpr = np.r_[0.0, _ratio(fps, np.full_like(fps, fps[-1]))]
    tpr = np.r_[0.0, _ratio(tps, np.full_like(tps, tps[-1]))]
    thresholds: list = [None] + [float(v) for v in s[last_of_group]]
    keep = np.unique(
        np.linspace(0, len(fpr) - 1, min(len(fpr), MAX_ROC_POINTS)).round().astype(int)
    )
    return {
        "fpr": fpr[keep].tolist(),
        "tpr": tpr[keep].tolist(),
        "thresholds": [thresholds[i] for i in keep],
    }


def point_metrics(
    y: np.ndarray, score: np.ndarray, threshold: float = 0.5
) -> dict[str, float | None]:
    """Accuracy, precision, recall (sensitivity), specificity, F1 at threshold, and ROC AUC."""
    y = np.asarray(y).astype(bool)
    counts = _counts(y, np.asarray(score) >= threshold)
    values: dict[str, float | None] = {k: float(v) for k, v in _from_counts(*counts).items()}
    values["roc_auc"] = roc_auc(y, score)
    return values


def bootstrap_intervals(
    y: np.ndarray,
    score: np.ndarray,
    threshold: float = 0.5,
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict[str, list[float] | None]:
    """Percentile bootstrap interval of each metric; None where it cannot be computed."""
    y = np.asarray(y).astype(bool)
    score = np.asarray(score, dtype=np.float64)
    if resamples == 0 or len(y) == 0:
        return {k: None for k in METRICS}
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(y), size=(resamples, len(y)))
    stats = _from_counts(*_counts(y[idx], score[idx] >= threshold, axis=1))
    aucs = [roc_auc(y[row], score[row]) for row in idx]
    stats["roc_auc"] = np.array([a for a in aucs if a is not None], dtype=np.float64)
    tail = (1 - confidence) / 2 * 100
    return {
        k: (
            [float(np.percentile(v, tail)), float(np.percentile(v, 100 - tail))] if len(v) else None
        )
        for k, v in stats.items()
    }


def by_patient(
    y: np.ndarray, score: np.ndarray, patients: Sequence[str]
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """One row per patient: its label and the mean of its slices' scores."""
    names = sorted(set(patients))
    position = {p: i for i, p in enumerate(names)}
    rows = np.array([position[p] for p in patients])
    total = np.bincount(rows, weights=np.asarray(score, dtype=np.float64), minlength=len(names))
    label = np.bincount(rows, weights=np.asarray(y, dtype=np.float64), minlength=len(names))
    count = np.bincount(rows, minlength=len(names))
    return (label / count >= 0.5).astype(int), total / count, names


def level_report(
    y: np.ndarray, score: np.ndarray, threshold: float, resamples: int, seed: int
) -> dict:
    """Every metric as {"value", "ci"}, plus counts, the confusion matrix and the ROC points."""
    values = point_metrics(y, score, threshold)
    intervals = bootstrap_intervals(y, score, threshold, resamples, seed)
    tp, fp, tn, fn = (
        int(c) for c in _counts(np.asarray(y).astype(bool), np.asarray(score) >= threshold)
    )
    report: dict = {"n": len(y), "positives": int(np.sum(y))}
    report.update(
        {
            k: {"value": values[k], "ci": intervals[k] if values[k] is not None else None}
            for k in METRICS
        }
    )
    report["confusion_matrix"] = {
        "labels": ["negative", "positive"],
        "rows_true_cols_pred": [[tn, fp], [fn, tp]],
        "tn": tn,
        "fp": fp,
        "fn": fn,
        "tp": tp,
    }
    report["roc"] = roc_points(y, score)
    return report


def full_report(
    y: np.ndarray,
    score: np.ndarray,
    patients: Sequence[str],
    threshold: float = 0.5,
    resamples: int = 1000,
    seed: int = 0,
) -> dict:
    """metrics.json's evaluation part: the per-slice and the per-patient reports."""
    py, pscore, _ = by_patient(y, score, patients)
    return {
        "threshold": threshold,
        "bootstrap": {
            "resamples": resamples,
            "confidence": 0.95,
            "method": "percentile",
            "unit": {"slice": "slice", "patient": "patient"},
        },
        "slice": level_report(np.asarray(y), np.asarray(score), threshold, resamples, seed),
        "patient": level_report(py, pscore, threshold, resamples, seed + 1),
    }
