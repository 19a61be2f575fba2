"""Intervals of bounded metrics stay inside [0, 1]: the leaderboard's interval over folds
(launcher/stats.py) and the trainer's bootstrap intervals in metrics.json, over edge cases
(every fold 0, every fold 1, a single fold, wildly spread folds) and generated values."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from launcher import sweepgrid as sg
from launcher.stats import bounded_interval
from launcher.workloads.ctxray.metrics import bootstrap_intervals

fractions = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


@pytest.mark.parametrize(
    "values",
    [
        [0.0, 0.0, 0.0],
        [1.0, 1.0, 1.0, 1.0, 1.0],
        [0.0, 1.0],
        [0.0, 1.0, 1.0],
        [0.375, 0.0, 1.0, 0.5],
        [0.5] * 20,
        [1e-12, 1 - 1e-12],
    ],
)
def test_edge_cases_stay_inside_zero_one_and_hold_the_mean(values):
    mean, (low, high) = bounded_interval(values)
    assert 0.0 <= low <= mean <= high <= 1.0


def test_one_fold_has_no_interval_rather_than_a_fake_one():
    assert bounded_interval([0.8]) == (0.8, None)


def test_the_issues_example_is_now_a_statement_about_an_accuracy():
    # Folds whose plain t interval was "0.375 (-1.213-1.963)".
    mean, (low, high) = bounded_interval([0.0, 0.0, 0.5, 1.0])
    assert mean == 0.375 and 0.0 < low < 0.375 < high < 1.0


@settings(max_examples=300, deadline=None)
@given(st.lists(fractions, min_size=2, max_size=20))
def test_any_folds_give_an_ordered_interval_inside_zero_one(values):
    mean, (low, high) = bounded_interval(values)
    assert 0.0 <= low <= mean <= high <= 1.0


@settings(max_examples=100, deadline=None)
@given(st.lists(fractions, min_size=1, max_size=6))
def test_the_leaderboard_never_prints_a_bound_outside_zero_one(accuracies):
    cells = sg.expand(
        sg.validate(
            {
                "models": ["resnet18"],
                "lrs": [1e-3],
                "lr_steps": [10],
                "weight_decays": [0.0],
                "folds": len(accuracies),
            }
        )
    )
    results = [(c, {"patient": {"accuracy": {"value": accuracies[c["fold"]]}}}) for c in cells]
    ci = sg.leaderboard(results)[0]["accuracy"]["ci"]
    assert ci is None if len(accuracies) == 1 else 0.0 <= ci[0] <= ci[1] <= 1.0


@pytest.mark.parametrize(
    "y, score",
    [
        ([1, 1, 1, 1], [0.9, 0.8, 0.7, 0.6]),  # every prediction right, one class
        ([0, 1, 0, 1], [0.9, 0.1, 0.8, 0.2]),  # every prediction wrong
        ([1], [0.7]),  # a single sample
        ([0, 1] * 20, [0.5] * 40),  # ties at the threshold
    ],
)
def test_the_trainers_bootstrap_intervals_stay_inside_zero_one(y, score):
    intervals = bootstrap_intervals(np.array(y), np.array(score), resamples=200, seed=3)
    for name, ci in intervals.items():
        if ci is not None:
            assert 0.0 <= ci[0] <= ci[1] <= 1.0, name
