"""Cancelling jobs and sweeps at a user's request."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from allocations.transitions import InvalidTransition

from ..backends.contract import Capability
from ..backends.registry import backend_for
from ..models import Job, Sweep
from ..selectors import check_can_act
from ..states import job_move

S = Job.State


def job_cancel(*, job: Job, by: Any) -> Job:
    """Cancel a job: scancel on the backend (outside any transaction), then `cancelled`.
    Members of its project and staff may (NotVisible, 404, for those who may not see it;
    Forbidden, 403, for reviewers). A job already final raises InvalidTransition (409).
    A job still being submitted is marked cancelled and the submission cancels its scheduler
    job when the id comes back."""
    check_can_act(by, job.allocation, what="cancel its jobs")
    if job.state in Job.FINAL:
        raise InvalidTransition(job, job.state, S.CANCELLED)
    _cancel_remote([job])
    return job_move(
        job=job,
        to=S.CANCELLED,
        by=by,
        comment="Cancelled by the user.",
        finished_at=timezone.now(),
        state_reason="cancelled by the user",
    )


def sweep_cancel(*, sweep: Sweep, by: Any) -> int:
    """Cancel every unfinished cell of a sweep (one scancel of the array). Returns how many.
    The same rule as job_cancel: members and staff; 404 for the unseeing, 403 for reviewers."""
    check_can_act(by, sweep.allocation, what="cancel its sweeps")
    live = list(sweep.jobs.select_related("allocation").exclude(state__in=Job.FINAL))
    if not live:
        raise InvalidTransition(sweep, "finished", S.CANCELLED)
    _cancel_remote(live)
    cancelled = 0
    for job in live:
        try:
            job_move(
                job=job,
                to=S.CANCELLED,
                by=by,
                comment="Sweep cancelled by the user.",
                finished_at=timezone.now(),
                state_reason="the sweep was cancelled",  # not "waiting for a free slot"
            )
            cancelled += 1
        except InvalidTransition:
            continue  # finished meanwhile
    return cancelled


def _cancel_remote(jobs: list[Job]) -> None:
    submitted = [j for j in jobs if j.scheduler_id]
    if not submitted:
        return
    facility = submitted[0].allocation.facility
    backend = backend_for(facility)
    if Capability.CANCEL in backend.capabilities:
        backend.cancel(facility=facility, jobs=submitted)
