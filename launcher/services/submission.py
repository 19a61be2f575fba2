"""Submitting jobs and sweeps to their backend, safely: the rows move to `submitting` (with
their token) before any network call, the network call happens outside any transaction, and
the backend looks the token up before submitting, so a retry, a lost reply or a worker killed
mid-submit never makes a second scheduler job. Only the caller holding the submission lease
submits (leases.py): a transient error gives the lease back with a backoff, and past the
deadline the job fails with its last error and staff are told."""
from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from pathlib import Path

from django.utils import timezone

from allocations.models import Facility

from ..backends.base import BackendError
from ..models import Job, Sweep
from ..backends.registry import Capability, backend_for
from ..runners import Submission
from .alerts import submission_failure_send
from .leases import (
    Lease, submit_lease_expired_past_deadline, submit_lease_release, submit_lease_take,
)
from .monitor import job_observe
from .moves import job_move_if

log = logging.getLogger(__name__)
S = Job.State


def job_submit(*, job_id: int) -> Job | None:
    """Submit one queued (or half-submitted) job if this caller takes its lease. Idempotent;
    a transient error schedules the next attempt (leases.py) instead of propagating."""
    job = Job.objects.select_related("allocation__facility").filter(pk=job_id, sweep=None).first()
    if job is not None:
        _submit([job], facility=job.allocation.facility, token=job.token)
        job.refresh_from_db()
    return job


def sweep_submit(*, sweep_id: int) -> Sweep | None:
    """Submit every queued cell of a sweep as one array, under one lease (see job_submit)."""
    sweep = Sweep.objects.select_related("allocation__facility").filter(pk=sweep_id).first()
    if sweep is not None:
        cells = list(sweep.jobs.select_related("allocation", "sweep").order_by("array_index"))
        _submit(cells, facility=sweep.allocation.facility, token=sweep.token)
    return sweep


def _submit(jobs: Sequence[Job], *, facility: Facility, token: str) -> None:
    lease = submit_lease_take(jobs=jobs)
    if lease is None:
        return  # another caller owns this submission, or nothing is left to submit
    todo = lease.jobs
    if submit_lease_expired_past_deadline(lease=lease):
        _give_up(lease, facility, "the workers that tried it stopped before they finished")
        return
    runner = backend_for(facility)
    if Capability.SUBMIT not in runner.capabilities:
        _fail(todo, f"{facility.name} is not connected to the portal: staff run work there by hand.")
        return
    # Network I/O, outside any transaction: the rows already say `submitting` with the token.
    try:
        submission = runner.submit(facility=facility, jobs=jobs, token=token)
    except BackendError as error:
        if error.permanent:
            _fail(todo, f"Submission refused: {error.message}")
        elif not submit_lease_release(lease=lease, error=error.message):
            _give_up(lease, facility, error.message)
        return
    _fault_point("after-submit")
    _record(todo, submission, facility=facility)


def _fault_point(name: str) -> None:
    """A named point where a crash test kills a real worker (tests/launcher/test_jobs_worker.py):
    inert unless PORTAL_FAULT_PAUSE names it; then it writes its pid to PORTAL_FAULT_FLAG (so the
    test knows the worker is there) and sleeps until killed. Never set in production."""
    if os.environ.get("PORTAL_FAULT_PAUSE") != name:
        return
    flag = os.environ.get("PORTAL_FAULT_FLAG")
    if flag:
        Path(flag).write_text(str(os.getpid()))
    time.sleep(float(os.environ.get("PORTAL_FAULT_SECONDS", "120")))


def _give_up(lease: Lease, facility: Facility, error: str) -> None:
    """The deadline passed: fail the rows with the last error and tell staff."""
    reason = (f"Not submitted: {facility.name} could not be reached in {lease.attempt} "
              f"attempt(s) before the submission deadline; last error: {error}")
    _fail(lease.jobs, reason)
    submission_failure_send(job_ids=lease.job_ids, reason=reason)


def _record(jobs: Sequence[Job], submission: Submission, *, facility: Facility) -> None:
    now = timezone.now()
    cancelled = []
    for job in jobs:
        updates = dict(scheduler_id=submission.scheduler_id, workdir=submission.workdir,
                       output_path=submission.output_path.format(index=job.array_index or 0),
                       submitted_at=now, submit_lease_owner="", submit_lease_until=None,
                       submit_next_at=None)
        note = "found by its token" if submission.already_submitted else "submitted"
        if job_move_if(job=job, to=S.PENDING, comment=f"Scheduler id {submission.scheduler_id} "
                                                    f"({note}).", state_reason="", **updates):
            # What the backend already knows (a local process that started): applied now,
            # through the same moves a poll makes, so the job is `running` when this returns.
            if (seen := submission.observed.get(job.pk)) is not None:
                job_observe(job=job, observation=seen)
        else:
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


