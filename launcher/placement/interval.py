"""The recommender's run time, calibrated on what past jobs on the same node type really took,
with an interval (pure).

The recommender predicts one run's hours (benchmarks/estimates.py); every succeeded job writes
its predicted and measured hours back (benchmarks/calibration.py). With at least
CALIBRATED_AFTER such jobs on the node type, the run time is the prediction x the median of
measured / predicted there, and the interval is the prediction x the 10th and 90th percentiles
of that ratio: "8 of 10 past runs here fell within it". With fewer, it is the prediction itself
with a stated interval by the recommender's confidence (CONFIDENCE_SPREAD)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

CALIBRATED_AFTER = 3
# Until jobs on a node type have been measured: the interval by the recommender's confidence,
# as factors of its prediction (stated, not measured).
CONFIDENCE_SPREAD = {"high": (0.8, 1.25), "medium": (0.67, 1.5), "low": (0.5, 2.0)}
UNKNOWN_SPREAD = (0.5, 2.0)


@dataclass(frozen=True)
class RunTime:
    """One run's predicted seconds with an interval and what they rest on. `source` is the
    recommender's (measured, recommender) or `wall-time` when nothing predicts it: then the
    run is taken as its wall time, the most it may run, and there is no interval."""

    seconds: float
    low: float | None
    high: float | None
    source: str
    basis: str


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) by linear interpolation between closest ranks."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no values")
    position = (len(ordered) - 1) * q / 100
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def run_time(
    *,
    predicted_hours: float | None,
    source: str,
    basis: str,
    confidence: str,
    ratios: Sequence[float],
    wall_time_minutes: int,
    node_type: str = "",
) -> RunTime:
    """The run time of one run: calibrated (`ratios`: measured / predicted hours of past jobs on
    the node type) when there are enough, else the prediction with a stated interval; the wall
    time when nothing predicts it. Never longer than the wall time (the run is stopped there)."""
    wall = wall_time_minutes * 60.0
    if predicted_hours is None:
        return RunTime(
            wall,
            None,
            None,
            "wall-time",
            f"no prediction ({basis}): taken as the "
            f"wall time, {wall_time_minutes} min, the most it may run",
        )
    predicted = predicted_hours * 3600
    where = f" on {node_type}" if node_type else ""
    if len(ratios) >= CALIBRATED_AFTER:
        middle = statistics.median(ratios)
        low, high = percentile(ratios, 10), percentile(ratios, 90)
        how = (
            f"the recommender's {predicted / 60:.1f} min x {middle:.2f}, the median of measured / "
            f"predicted over the last {len(ratios)} measured runs{where} (80% of them within "
            f"{low:.2f}-{high:.2f}x)"
        )
        seconds, lo, hi = predicted * middle, predicted * low, predicted * high
    else:
        spread = CONFIDENCE_SPREAD.get(confidence, UNKNOWN_SPREAD)
        how = (
            f"the recommender's prediction ({basis}); interval {spread[0]:g}-{spread[1]:g}x for "
            f"{confidence or 'unstated'} confidence, stated: fewer than {CALIBRATED_AFTER} "
            f"runs measured{where} yet"
        )
        seconds, lo, hi = predicted, predicted * spread[0], predicted * spread[1]
    if seconds > wall:
        how += f"; longer than the wall time, so it stops at {wall_time_minutes} min"
    return RunTime(min(seconds, wall), min(lo, wall), min(hi, wall), source, how)
