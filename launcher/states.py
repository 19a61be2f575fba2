"""The Job state machine (DESIGN.md) as a table, for allocations.transitions.transition()."""
from __future__ import annotations

from .models import Job

S = Job.State

JOB_MOVES: dict[str, tuple[str, ...]] = {
    S.QUEUED: (S.SUBMITTING, S.CANCELLED, S.FAILED),
    # A submission that fails permanently is failed; a cancel while submitting is honoured
    # once the scheduler id is known (the monitor cancels it).
    S.SUBMITTING: (S.PENDING, S.RUNNING, S.FAILED, S.CANCELLED, S.SUCCEEDED, S.TIMEOUT),
    S.PENDING: (S.RUNNING, S.SUCCEEDED, S.FAILED, S.CANCELLED, S.TIMEOUT, S.PREEMPTED),
    S.RUNNING: (S.SUCCEEDED, S.FAILED, S.CANCELLED, S.TIMEOUT, S.PREEMPTED, S.PENDING),
    # Preempted work is requeued by the scheduler and resumes from its last checkpoint.
    S.PREEMPTED: (S.PENDING, S.RUNNING, S.FAILED, S.CANCELLED, S.TIMEOUT, S.SUCCEEDED),
    S.SUCCEEDED: (),
    S.FAILED: (),
    S.CANCELLED: (),
    S.TIMEOUT: (),
}
