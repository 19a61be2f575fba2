"""Placement measured against reality (pure): per facility, how far the predicted wait and
finish of placed jobs were from the real ones. Real wait = started - launched; real finish =
finished. The error is |predicted - real| in seconds: its median and 90th percentile, and n."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from .interval import percentile


@dataclass(frozen=True)
class Measured:
    """One placed job: its facility, predicted and real wait (s), predicted and real finish as
    seconds from its launch (None while it has not finished)."""

    facility: str
    predicted_wait: float
    real_wait: float
    predicted_finish: float | None
    real_finish: float | None


@dataclass(frozen=True)
class PlacementError:
    facility: str
    jobs: int
    wait_median: float
    wait_p90: float
    finished: int
    finish_median: float | None
    finish_p90: float | None
    wait_bias: float  # median of predicted - real: > 0 means it predicted waits too long


def placement_errors(rows: Iterable[Measured]) -> list[PlacementError]:
    """One row per facility (sorted by name): |predicted - real| wait over the jobs that
    started, and finish over those that also finished."""
    groups: dict[str, list[Measured]] = defaultdict(list)
    for row in rows:
        groups[row.facility].append(row)
    out = []
    for facility, found in sorted(groups.items()):
        waits = [abs(r.predicted_wait - r.real_wait) for r in found]
        ends = [
            abs(r.predicted_finish - r.real_finish)
            for r in found
            if r.predicted_finish is not None and r.real_finish is not None
        ]
        out.append(
            PlacementError(
                facility=facility,
                jobs=len(found),
                wait_median=statistics.median(waits),
                wait_p90=percentile(waits, 90),
                finished=len(ends),
                finish_median=statistics.median(ends) if ends else None,
                finish_p90=percentile(ends, 90) if ends else None,
                wait_bias=statistics.median(r.predicted_wait - r.real_wait for r in found),
            )
        )
    return out
