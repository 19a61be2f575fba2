"""How long a job would wait before it starts (pure). Three sources, best first:

- the scheduler's own estimate (Slurm: `sbatch --test-only` and the partition's backlog; a
  cloud: the measured time to a ready worker), asked through the backend seam;
- the facility's slots and its queue (a backend that knows its slots, e.g. local): the running
  jobs free their slots when they are predicted to end, the waiting jobs ahead take them first
  (oldest first, as the local backend starts them), and the job starts when enough are free;
- the facility's recent history, where neither answers (the scheduler gave no estimate or could
  not be asked): the median of the last HISTORY_SAMPLE waits there (launch to start, single
  jobs, the last HISTORY_DAYS days); with none, NO_HISTORY_SECONDS, said as such.

The first two are then corrected by what they got wrong here before (`calibrated`): a
scheduler's estimate counts every job ahead to its time limit and the slots count jobs without
a prediction to their wall time, and most end well before. Once CALIBRATION_MIN placed jobs at
the facility have started (the last HISTORY_DAYS days), the estimate is multiplied by the
median of their real / predicted wait, and the basis says so with both figures.
"""

from __future__ import annotations

import heapq
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from .words import duration_text

HISTORY_SAMPLE = 20
HISTORY_DAYS = 14
CALIBRATION_MIN = 5
# Waits predicted shorter than this say too little of the source's bias to learn from.
CALIBRATION_FLOOR_SECONDS = 30.0
NO_HISTORY_SECONDS = 0.0
# A slot busy with something that is not a job (a notebook session) is taken as busy this long.
UNKNOWN_BUSY_SECONDS = 3600.0


@dataclass(frozen=True)
class Wait:
    """The predicted wait in seconds, where it comes from (`scheduler`, `slots`, `history`,
    `none`) and why, in words; `backlog` is the jobs waiting ahead when known."""

    seconds: float
    source: str
    basis: str
    backlog: int | None = None
    # The source's own estimate before `calibrated` corrected it (None: not corrected): what
    # the next correction learns from, so a corrected prediction never trains on itself.
    raw_seconds: float | None = None

    @property
    def uncorrected(self) -> float:
        return self.seconds if self.raw_seconds is None else self.raw_seconds


@dataclass(frozen=True)
class Running:
    """A job holding `slots` slots, predicted to free them in `remaining` seconds."""

    slots: int
    remaining: float


def slot_wait(
    *, slots: int, in_use: int, need: int, running: Sequence[Running], queue: Sequence[Running]
) -> Wait:
    """When `need` of `slots` are free after the `queue` (jobs waiting ahead, oldest first,
    each with its predicted run time as `remaining`) has started: running jobs free their slots
    at their predicted ends; slots in use by something else (in_use beyond the running jobs)
    for UNKNOWN_BUSY_SECONDS. Assumes need <= slots (a larger job is refused before)."""
    events: list[tuple[float, int]] = [(max(0.0, r.remaining), r.slots) for r in running]
    held = sum(r.slots for r in running)
    other = max(0, in_use - held)
    if other:
        events.append((UNKNOWN_BUSY_SECONDS, other))
    free = max(0, slots - max(in_use, held))
    heapq.heapify(events)
    now = 0.0
    for ahead in queue:
        want = min(ahead.slots, slots)
        while free < want and events:
            now, freed = heapq.heappop(events)
            free += freed
        free -= want
        heapq.heappush(events, (now + max(0.0, ahead.remaining), want))
    while free < need and events:
        now, freed = heapq.heappop(events)
        free += freed
    busy = min(max(in_use, held), slots)
    said = f"{busy} of {slots} slot{'s' if slots != 1 else ''} in use"
    if queue:
        said += f", {len(queue)} job{'s' if len(queue) != 1 else ''} waiting ahead"
    if now == 0:
        return Wait(0.0, "slots", f"a free slot now ({said})", backlog=len(queue))
    return Wait(
        now,
        "slots",
        f"{said}: a slot frees in {duration_text(now)} when the jobs before it end as predicted",
        backlog=len(queue),
    )


def history_wait(samples: Sequence[float], *, why: str = "") -> Wait:
    """The median of the facility's recent waits (seconds from launch to start), or
    NO_HISTORY_SECONDS with "no measurement yet" when there are none."""
    lead = f"{why}; " if why else ""
    if not samples:
        return Wait(
            NO_HISTORY_SECONDS,
            "none",
            f"{lead}no measurement yet: no job has started here in the last {HISTORY_DAYS} "
            f"days, so the wait is taken as {duration_text(NO_HISTORY_SECONDS)}",
        )
    median = statistics.median(samples)
    return Wait(
        median,
        "history",
        f"{lead}the median of the last {len(samples)} wait{'s' if len(samples) != 1 else ''} "
        f"here (launch to start, last {HISTORY_DAYS} days): {duration_text(median)}",
    )


def calibrated(wait: Wait, pairs: Sequence[tuple[float, float]]) -> Wait:
    """`wait` multiplied by the median real / predicted wait of `pairs` ((uncorrected
    predicted, real) seconds of the facility's recent placed jobs that started), once there are
    CALIBRATION_MIN with a prediction of at least CALIBRATION_FLOOR_SECONDS; otherwise `wait`
    as it was. Only a prediction from the scheduler or the slots is corrected (history is
    already measured); `raw_seconds` keeps the estimate it corrected."""
    ratios = [
        real / predicted for predicted, real in pairs if predicted >= CALIBRATION_FLOOR_SECONDS
    ]
    if (
        wait.source not in ("backend", "slots")
        or wait.seconds <= 0
        or len(ratios) < CALIBRATION_MIN
    ):
        return wait
    factor = statistics.median(ratios)
    return Wait(
        wait.seconds * factor,
        wait.source,
        f"{wait.basis}; x {factor:.2f}, the median real / predicted wait of the last "
        f"{len(ratios)} placed jobs here: {duration_text(wait.seconds * factor)}",
        backlog=wait.backlog,
        raw_seconds=wait.seconds,
    )
