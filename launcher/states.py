"""The Job state machine (DESIGN.md) as a table, and the one place that applies it:
`job_move` / `job_move_if` move a job by the table (compare-and-swap, audited), releasing its
reservation in the allocation's ledger when the move ends it (as notebooks/states.py and
cloud/states.py do for their machines)."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from allocations.services import ledger_jobs_change
from allocations.transitions import TransitionConflict, transition

from .models import Job

S = Job.State

JOB_MOVES: dict[str, tuple[str, ...]] = {
    # A sweep cell may be stopped early (its configuration lost at a rung) from any live state.
    S.QUEUED: (S.SUBMITTING, S.CANCELLED, S.FAILED, S.STOPPED_EARLY),
    # A submission that fails permanently is failed; a cancel while submitting is honoured
    # once the scheduler id is known (the monitor cancels it).
    S.SUBMITTING: (
        S.PENDING,
        S.RUNNING,
        S.FAILED,
        S.CANCELLED,
        S.SUCCEEDED,
        S.TIMEOUT,
        S.STOPPED_EARLY,
    ),
    S.PENDING: (
        S.RUNNING,
        S.SUCCEEDED,
        S.FAILED,
        S.CANCELLED,
        S.TIMEOUT,
        S.PREEMPTED,
        S.STOPPED_EARLY,
    ),
    S.RUNNING: (
        S.SUCCEEDED,
        S.FAILED,
        S.CANCELLED,
        S.TIMEOUT,
        S.PREEMPTED,
        S.PENDING,
        S.STOPPED_EARLY,
    ),
    # Preempted work is requeued by the scheduler and resumes from its last checkpoint.
    S.PREEMPTED: (
        S.PENDING,
        S.RUNNING,
        S.FAILED,
        S.CANCELLED,
        S.TIMEOUT,
        S.SUCCEEDED,
        S.STOPPED_EARLY,
    ),
    S.SUCCEEDED: (),
    S.FAILED: (),
    S.CANCELLED: (),
    S.TIMEOUT: (),
    S.STOPPED_EARLY: (),
}

# Columns that change what a job reserves (launcher/selectors.py, `job_reservations`), besides
# its state.
RESERVING = frozenset({"gpu_seconds", "prior_gpu_seconds", "estimate_gpu_hours", "estimate_cost"})


def job_move(*, job: Job, to: str, by: Any = None, comment: str = "", **updates: Any) -> Job:
    """Move `job` to `to` (compare-and-swap, audited). Raises InvalidTransition/TransitionConflict.
    A move that ends the job (or re-bases its estimate) releases its reservation in the
    allocation's ledger in the same transaction, under the allocation's row lock."""
    with transaction.atomic():
        if to in Job.FINAL or job.state in Job.FINAL or RESERVING & updates.keys():
            with ledger_jobs_change(allocation_ids=[job.allocation_id], job_ids=[job.pk]):
                transition(
                    job, to=to, table=JOB_MOVES, actor=by, comment=comment, field="state", **updates
                )
        else:
            transition(
                job, to=to, table=JOB_MOVES, actor=by, comment=comment, field="state", **updates
            )
    return job


def job_move_if(*, job: Job, to: str, comment: str = "", **updates: Any) -> bool:
    """Like job_move for system moves that may race with a user's (cancel) or another poller:
    returns False instead of raising when the job is no longer where we read it."""
    if to not in JOB_MOVES.get(job.state, ()):
        return False
    try:
        job_move(job=job, to=to, comment=comment, **updates)
    except TransitionConflict:
        job.refresh_from_db()
        return False
    return True
