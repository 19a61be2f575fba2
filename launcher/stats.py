"""Intervals for metrics bounded to [0, 1] (accuracy, recall, specificity, ROC AUC...), in one
place. Pure Python: the portal, its tests and the bench use it.

The sweep leaderboard averages a metric over the folds of a cross-validation (2 to 20 values).
A plain Student t interval on those values can leave [0, 1] ("0.375 (-1.213-1.963)"), which is
no statement about an accuracy at all. So the interval is computed on the logit scale, where
the metric is unbounded, and mapped back:

    z_i = logit(clip(x_i, EPS, 1 - EPS));  z_bar +- t(0.975, n - 1) * s_z / sqrt(n);  expit(.)

The result always lies inside [0, 1], widens towards the middle and narrows near a bound the way
a proportion's uncertainty does, and keeps Student's t for the few folds there are. Values at
exactly 0 or 1 are clipped to EPS (a fold that classified every patient right is still only one
sample of the method's accuracy). With one fold there is no interval (None), not a fake one.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

METHOD = "Student t interval over folds on the logit scale, mapped back into [0, 1]"
EPS = 1e-3

# Two-sided 95% Student t critical values by degrees of freedom; 1.96 beyond the table.
_T975 = {
    1: 12.706,
    2: 4.303,
    3: 3.182,
    4: 2.776,
    5: 2.571,
    6: 2.447,
    7: 2.365,
    8: 2.306,
    9: 2.262,
    10: 2.228,
    11: 2.201,
    12: 2.179,
    13: 2.160,
    14: 2.145,
    15: 2.131,
    16: 2.120,
    17: 2.110,
    18: 2.101,
    19: 2.093,
    20: 2.086,
    25: 2.060,
    30: 2.042,
    40: 2.021,
    60: 2.000,
    120: 1.980,
}


def t975(df: int) -> float:
    """The two-sided 95% t critical value (conservative: the next tabulated df down)."""
    if df in _T975:
        return _T975[df]
    below = [k for k in _T975 if k <= df]
    return _T975[max(below)] if below and df <= 120 else 1.96


def _logit(p: float) -> float:
    p = min(max(p, EPS), 1 - EPS)
    return math.log(p / (1 - p))


def _expit(z: float) -> float:
    if z >= 0:
        return 1 / (1 + math.exp(-z))
    e = math.exp(z)
    return e / (1 + e)


def bounded_interval(values: Sequence[float]) -> tuple[float, list[float] | None]:
    """Mean and 95% interval of a [0, 1]-bounded metric over folds (None with fewer than two
    values). The interval's ends are always within [0, 1] and ordered low <= high."""
    if not values:
        raise ValueError("no values")
    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, None
    z = [_logit(float(v)) for v in values]
    half = t975(len(z) - 1) * statistics.stdev(z) / math.sqrt(len(z))
    centre = statistics.fmean(z)
    low, high = _expit(centre - half), _expit(centre + half)
    # The mean of the values themselves is what the table ranks by; keep it inside its interval.
    return mean, [min(low, mean), max(high, mean)]
