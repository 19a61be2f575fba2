"""Submitting jobs and sweeps to their backend, safely: the rows move to `submitting` (with
their token) before any network call, the network call happens outside any transaction, and
the backend looks the token up before submitting, so a retry, a lost reply or a worker killed
mid-submit never makes a second scheduler job."""
from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Sequence

from django.utils import timezone

from allocations.models import Facility

from .. import faults
from ..backends.base import BackendError
from ..models import Job, Sweep
from ..backends.registry import Capability, backend_for
from ..runners import Submission
from .moves import job_move_if

log = logging.getLogger(__name__)
S = Job.State


def job_submit(*, job_id: int) -> Job | None:
    """Submit one queued (or half-submitted) job. Idempotent; transient errors propagate."""
    job = Job.objects.select_related("allocation__facility").filter(pk=job_id, sweep=None).first()
    if job is not None:
        _submit([job], facility=job.allocation.facility, token=job.token)
        job.refresh_from_db()
    return job


def sweep_submit(*, sweep_id: int) -> Sweep | None:
    """Submit every queued cell of a sweep as one array. Idempotent; transient errors propagate."""
    sweep = Sweep.objects.select_related("allocation__facility").filter(pk=sweep_id).first()
    if sweep is not None:
        cells = list(sweep.jobs.select_related("allocation", "sweep").order_by("array_index"))
        _submit(cells, facility=sweep.allocation.facility, token=sweep.token)
    return sweep


def _claim(jobs: Sequence[Job]) -> list[Job]:
    """Move queued jobs to submitting; jobs already submitting are a retry's to finish."""
    for job in jobs:
        if job.state == S.QUEUED:
            job_move_if(job=job, to=S.SUBMITTING)
    return [j for j in jobs if j.state == S.SUBMITTING]


def _submit(jobs: Sequence[Job], *, facility: Facility, token: str) -> None:
    todo = _claim(jobs)
    if not todo:
        return
    runner = backend_for(facility)
    if Capability.SUBMIT not in runner.capabilities:
        _fail(todo, f"{facility.name} is not connected to the portal: staff run work there by hand.")
        return
    # Network I/O, outside any transaction: the rows already say `submitting` with the token.
    try:
        submission = runner.submit(facility=facility, jobs=jobs, token=token)
    except BackendError as error:
        if not error.permanent:
            raise
        _fail(todo, f"Submission refused: {error.message}")
        return
    faults.point("after-submit")
    _record(todo, submission, facility=facility)


def _record(jobs: Sequence[Job], submission: Submission, *, facility: Facility) -> None:
    now = timezone.now()
    cancelled = []
    for job in jobs:
        updates = dict(scheduler_id=submission.scheduler_id, workdir=submission.workdir,
                       output_path=submission.output_path.format(index=job.array_index or 0),
                       submitted_at=now)
        note = "found by its token" if submission.already_submitted else "submitted"
        if not job_move_if(job=job, to=S.PENDING, comment=f"Scheduler id {submission.scheduler_id} "
                                                        f"({note}).", **updates):
            # Cancelled while we were submitting: keep the id and cancel it there too.
            Job.objects.filter(pk=job.pk).update(**updates)
            job.scheduler_id = submission.scheduler_id
            if job.state == S.CANCELLED:
                cancelled.append(job)
    backend = backend_for(facility)
    if cancelled and Capability.CANCEL in backend.capabilities:
        backend.cancel(facility=facility, jobs=cancelled)


def _fail(jobs: Sequence[Job], reason: str) -> None:
    for job in jobs:
        job_move_if(job=job, to=S.FAILED, comment=reason, state_reason=reason[:300],
                    finished_at=timezone.now())


def stalled_submissions(*, older_than: dt.timedelta = dt.timedelta(seconds=30)) -> dict[str, list[int]]:
    """Jobs and sweeps stuck in `submitting` (their worker died) or `queued` (their message was
    lost) for longer than `older_than`: the reconciler re-enqueues their submission, which is
    safe because submission is idempotent by token."""
    cutoff = timezone.now() - older_than
    stuck = Job.objects.filter(state__in=[S.QUEUED, S.SUBMITTING], created_at__lt=cutoff,
                               submitted_at__isnull=True)
    return {"jobs": list(stuck.filter(sweep=None).values_list("pk", flat=True)[:200]),
            "sweeps": list(stuck.exclude(sweep=None).order_by().values_list("sweep_id", flat=True)
                           .distinct()[:50])}
