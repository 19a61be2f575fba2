"""Metrics agree with scikit-learn; bootstrap intervals contain the estimate and cover the truth."""

import numpy as np
import pytest
from sklearn import metrics as sk

from launcher.workloads.ctxray import metrics as m


@pytest.fixture
def scored():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 300)
    score = np.clip(0.35 * y + rng.normal(0.35, 0.2, 300), 0, 1).round(2)  # rounded: many ties
    return y, score


def test_point_metrics_match_scikit_learn(scored):
    y, score = scored
    pred = score >= 0.5
    got = m.point_metrics(y, score)
    tn, fp, _, _ = sk.confusion_matrix(y, pred).ravel()
    assert got["accuracy"] == pytest.approx(sk.accuracy_score(y, pred))
    assert got["precision"] == pytest.approx(sk.precision_score(y, pred))
    assert got["recall"] == pytest.approx(sk.recall_score(y, pred))
    assert got["specificity"] == pytest.approx(tn / (tn + fp))
    assert got["f1"] == pytest.approx(sk.f1_score(y, pred))
    assert got["roc_auc"] == pytest.approx(sk.roc_auc_score(y, score))
    report = m.level_report(y, score, 0.5, 100, 0)
    assert (
        report["confusion_matrix"]["rows_true_cols_pred"] == sk.confusion_matrix(y, pred).tolist()
    )


def test_roc_points_match_scikit_learn(scored):
    y, score = scored
    fpr, tpr, thresholds = sk.roc_curve(y, score, drop_intermediate=False)
    got = m.roc_points(y, score)
    assert got["fpr"] == pytest.approx(fpr.tolist()) and got["tpr"] == pytest.approx(tpr.tolist())
    assert got["thresholds"][1:] == pytest.approx(thresholds[1:].tolist())


def test_degenerate_cases_follow_scikit_learn_conventions():
    y = np.array([0, 0, 0])
    got = m.point_metrics(y, np.array([0.1, 0.2, 0.9]))
    assert got["roc_auc"] is None
    assert got["precision"] == sk.precision_score(y, [0, 0, 1], zero_division=0) == 0.0


def test_bootstrap_intervals_contain_the_estimate(scored):
    y, score = scored
    report = m.level_report(y, score, 0.5, 500, 1)
    for name in m.METRICS:
        lo, hi = report[name]["ci"]
        assert lo <= report[name]["value"] <= hi, name
        assert hi - lo > 0.01, name  # 300 samples leave real uncertainty


def test_bootstrap_accuracy_interval_covers_the_true_rate_about_95_percent_of_the_time():
    rng = np.random.default_rng(42)
    hits = 0
    for _ in range(100):
        y = rng.integers(0, 2, 200)
        correct = rng.random(200) < 0.8  # true accuracy 0.8
        score = np.where(correct, y, 1 - y).astype(float)
        lo, hi = m.bootstrap_intervals(y, score, resamples=300, seed=int(rng.integers(1e9)))[
            "accuracy"
        ]
        hits += lo <= 0.8 <= hi
    assert 85 <= hits <= 100


def test_patient_level_averages_slice_probabilities():
    y = np.array([1, 1, 1, 0, 0])
    score = np.array([0.9, 0.2, 0.7, 0.4, 0.8])
    labels, probs, names = m.by_patient(y, score, ["a", "a", "a", "b", "b"])
    assert names == ["a", "b"] and labels.tolist() == [1, 0]
    assert probs == pytest.approx([0.6, 0.6])
    report = m.full_report(y, score, ["a", "a", "a", "b", "b"], resamples=50)
    assert report["patient"]["n"] == 2 and report["slice"]["n"] == 5
