"""Asynchronous successive halving (ASHA: Li et al., "A System for Massively Parallel
Hyperparameter Tuning", MLSys 2020), the stopping variant Ray Tune's ASHAScheduler and Optuna's
SuccessiveHalvingPruner use: when a configuration reaches a rung, its value is recorded beside
those of every configuration that reached the rung before it, and it continues only if it ranks
in the top max(1, n // eta) of those n (Optuna's promotion rule). Nobody waits for the slowest
configuration of a rung; a decision, once made, stands.

A value is (metric, loss): the sweep's ranking metric on the validation split averaged over the
folds that reached the rung (higher is better; None when the metric is undefined there, e.g.
ROC AUC with one class), then the mean validation loss (lower is better) to break ties; equal
values rank by arrival.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from statistics import fmean

Value = Sequence[float | None]  # (metric or None, loss)


def rank_key(value: Value) -> tuple[bool, float, float]:
    """Sort key, best first: a defined metric before None, higher metric, lower loss."""
    metric, loss = value[0], value[1]
    return (metric is None, -(metric if metric is not None else 0.0), float(loss or 0.0))


def promoted(label: str, recorded: Mapping[str, Value], eta: int) -> bool:
    """Whether `label` (already in `recorded`, the rung's values in arrival order) is in the
    top max(1, n // eta) of the n configurations recorded at the rung."""
    keep = max(1, len(recorded) // eta)
    ranked = sorted(recorded, key=lambda key: rank_key(recorded[key]))  # stable: arrival order
    return label in ranked[:keep]


def mean_value(points: Iterable[tuple[float | None, float]]) -> list[float | None]:
    """The folds' values at a rung averaged: [metric mean (None if no fold has it), loss mean]."""
    points = list(points)
    metrics = [m for m, _ in points if m is not None]
    return [
        round(fmean(metrics), 6) if metrics else None,
        round(fmean(loss for _, loss in points), 6),
    ]
