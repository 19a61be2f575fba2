"""Submitting jobs and sweeps to their backend, safely, and the submission lease that makes
each submission have one owner.

The rows move to `submitting` (with their token) before any network call, the network call
happens outside any transaction, and the backend looks the token up before submitting, so a
retry, a lost reply or a worker killed mid-submit never makes a second scheduler job. Only the
caller holding the submission lease submits: a transient error gives the lease back with a
backoff, and past the deadline the job fails with its last error and staff are told.

The lease (`submit_lease_take` and below): a job (or a sweep's cells, together) in `submitting`
is submitted only by the caller that took its lease, a compare-and-swap on the rows under
`SELECT ... FOR UPDATE`: a second caller (a duplicate task, the beat's re-enqueue, a retry)
finds the lease held and does nothing. A failed attempt gives the lease back and sets the next
attempt's time (exponential backoff from `SUBMIT_RETRY_BASE_SECONDS`, capped at
`SUBMIT_RETRY_MAX_SECONDS`, never past the deadline); the first failure at or after the
deadline (`SUBMIT_DEADLINE_SECONDS` after the first attempt) fails the job with its last
error, and staff are told by email. A worker that dies holding the lease loses it when it
expires (`SUBMIT_LEASE_SECONDS`); the beat task re-enqueues only jobs whose lease expired (or
was given back) and whose next attempt is due (`submissions_dispatch`)."""

from __future__ import annotations

import datetime as dt
import logging
import os
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from allocations.models import Facility

from ..backends.contract import BackendError, Capability, Submission
from ..backends.registry import backend_for
from ..models import Job, Sweep
from ..states import job_move_if
from .alerts import submission_failure_send
from .monitor import job_observe

log = logging.getLogger(__name__)
S = Job.State
# A queued job whose task message was lost is picked up by the beat after this long.
QUEUED_GRACE = dt.timedelta(seconds=30)
# The beat dispatches at most this many jobs and sweeps per run (the rest on the next).
DISPATCH_LIMIT = 200


def job_submit(*, job_id: int) -> Job | None:
    """Submit one queued (or half-submitted) job if this caller takes its lease. Idempotent;
    a transient error schedules the next attempt (submit_lease_release) instead of propagating."""
    job = Job.objects.select_related("allocation__facility").filter(pk=job_id, sweep=None).first()
    if job is not None:
        _submit([job], facility=job.allocation.facility, token=job.token)
        job.refresh_from_db()
    return job


def sweep_submit(*, sweep_id: int) -> Sweep | None:
    """Submit every queued cell of a sweep as one array, under one lease (see job_submit)."""
    sweep = Sweep.objects.select_related("allocation__facility").filter(pk=sweep_id).first()
    if sweep is not None:
        cells = list(
            sweep.jobs.select_related("allocation", "sweep")
            .filter(held=False)
            .order_by("array_index")
        )
        # A staged sweep's batches (launcher/services/sweeps.py) each carry their own token and
        # go as their own array; a plain sweep is one batch under the sweep's token.
        batches: dict[str, list[Job]] = {}
        for cell in cells:
            batches.setdefault(cell.token, []).append(cell)
        for token, batch in batches.items():
            if sweep.staged:  # a cell stopped before its batch was submitted never starts
                batch = [c for c in batch if c.state not in Job.FINAL]
            if any(c.state in (S.QUEUED, S.SUBMITTING) and c.submitted_at is None for c in batch):
                _submit(batch, facility=sweep.allocation.facility, token=token)
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
        _fail(
            todo, f"{facility.name} is not connected to the portal: staff run work there by hand."
        )
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
    reason = (
        f"Not submitted: {facility.name} could not be reached in {lease.attempt} "
        f"attempt(s) before the submission deadline; last error: {error}"
    )
    _fail(lease.jobs, reason)
    submission_failure_send(job_ids=lease.job_ids, reason=reason)


def _record(jobs: Sequence[Job], submission: Submission, *, facility: Facility) -> None:
    now = timezone.now()
    cancelled = []
    for job in jobs:
        updates = dict(
            scheduler_id=submission.scheduler_id,
            workdir=submission.workdir,
            output_path=submission.output_path.format(index=job.array_index or 0),
            submitted_at=now,
            submit_lease_owner="",
            submit_lease_until=None,
            submit_next_at=None,
        )
        note = "found by its token" if submission.already_submitted else "submitted"
        if job_move_if(
            job=job,
            to=S.PENDING,
            comment=f"Scheduler id {submission.scheduler_id} ({note}).",
            state_reason="",
            **updates,
        ):
            # What the backend already knows (a local process that started): applied now,
            # through the same moves a poll makes, so the job is `running` when this returns.
            if (seen := submission.observed.get(job.pk)) is not None:
                job_observe(job=job, observation=seen)
        else:
            # Cancelled while we were submitting: keep the id and cancel it there too.
            Job.objects.filter(pk=job.pk).update(**updates)
            job.scheduler_id = submission.scheduler_id
            if job.state in (S.CANCELLED, S.STOPPED_EARLY):
                cancelled.append(job)
    backend = backend_for(facility)
    if cancelled and Capability.CANCEL in backend.capabilities:
        backend.cancel(facility=facility, jobs=cancelled)


def _fail(jobs: Sequence[Job], reason: str) -> None:
    for job in jobs:
        job_move_if(
            job=job,
            to=S.FAILED,
            comment=reason,
            state_reason=reason[:300],
            finished_at=timezone.now(),
        )


# The submission lease: one owner per submission, retries with backoff, a deadline.


@dataclass(frozen=True)
class Lease:
    """The right to submit these rows until `until`; `attempt` counts from 1."""

    owner: str
    jobs: list[Job]
    attempt: int
    deadline: dt.datetime
    until: dt.datetime

    @property
    def job_ids(self) -> list[int]:
        return [job.pk for job in self.jobs]


def _seconds(name: str) -> dt.timedelta:
    return dt.timedelta(seconds=int(getattr(settings, name)))


def submit_backoff(*, attempt: int) -> dt.timedelta:
    """How long to wait after failed attempt number `attempt` (1, 2, ...): base x 2^(n-1),
    capped."""
    base, cap = int(settings.SUBMIT_RETRY_BASE_SECONDS), int(settings.SUBMIT_RETRY_MAX_SECONDS)
    return dt.timedelta(seconds=min(cap, base * 2 ** min(max(attempt - 1, 0), 20)))


def submit_lease_take(*, jobs: Sequence[Job], now: dt.datetime | None = None) -> Lease | None:
    """Take the submission lease of these rows (a job, or every cell of a sweep) or return None
    when another caller holds it or nothing is left to submit. Queued rows move to `submitting`
    (audited) in the same transaction; the first attempt sets the deadline."""
    now = now or timezone.now()
    owner = uuid.uuid4().hex
    with transaction.atomic():
        rows = [
            row
            for row in Job.objects.select_for_update()
            .filter(pk__in=[job.pk for job in jobs])
            .order_by("pk")
            if row.state in (S.QUEUED, S.SUBMITTING) and row.submitted_at is None
        ]
        if not rows or any(r.submit_lease_until and r.submit_lease_until > now for r in rows):
            return None
        attempt = max(r.submit_attempts for r in rows) + 1
        deadline = min(
            (r.submit_deadline for r in rows if r.submit_deadline),
            default=now + _seconds("SUBMIT_DEADLINE_SECONDS"),
        )
        until = now + _seconds("SUBMIT_LEASE_SECONDS")
        fields: dict[str, Any] = {
            "submit_lease_owner": owner,
            "submit_lease_until": until,
            "submit_next_at": None,
            "submit_attempts": attempt,
            "submit_deadline": deadline,
        }
        for row in rows:
            if row.state == S.QUEUED:
                job_move_if(job=row, to=S.SUBMITTING, **fields)
            else:
                Job.objects.filter(pk=row.pk).update(**fields)
                for key, value in fields.items():
                    setattr(row, key, value)
    return Lease(owner=owner, jobs=rows, attempt=attempt, deadline=deadline, until=until)


def submit_lease_release(*, lease: Lease, error: str, now: dt.datetime | None = None) -> bool:
    """Give the lease back after a transient failure: the next attempt is due after the
    backoff (never later than the deadline). Returns False when the deadline has passed: the
    caller fails the job (_give_up) instead."""
    now = now or timezone.now()
    if now >= lease.deadline:
        return False
    next_at = min(now + submit_backoff(attempt=lease.attempt), lease.deadline)
    reason = (
        f"Submission attempt {lease.attempt} failed ({error}); next attempt at "
        f"{timezone.localtime(next_at):%H:%M:%S}."
    )
    Job.objects.filter(pk__in=lease.job_ids, submit_lease_owner=lease.owner).update(
        submit_lease_owner="",
        submit_lease_until=None,
        submit_next_at=next_at,
        state_reason=reason[:300],
    )
    return True


def submit_lease_expired_past_deadline(*, lease: Lease, now: dt.datetime | None = None) -> bool:
    """Whether this attempt starts so long after the deadline that it must not be tried (the
    workers that took the earlier leases died without giving them back)."""
    now = now or timezone.now()
    return now >= lease.deadline + _seconds("SUBMIT_LEASE_SECONDS")


def _due(now: dt.datetime) -> QuerySet[Job]:
    free = Q(submit_lease_until__isnull=True) | Q(submit_lease_until__lte=now)
    due = Q(submit_next_at__isnull=True) | Q(submit_next_at__lte=now)
    waiting = Q(state=S.SUBMITTING) | Q(state=S.QUEUED, created_at__lt=now - QUEUED_GRACE)
    return Job.objects.filter(waiting, free, due, submitted_at__isnull=True, held=False)


def submissions_due(*, now: dt.datetime | None = None) -> dict[str, list[int]]:
    """Jobs and sweeps whose submission nobody owns and whose next attempt is due: a lease
    that expired (its worker died), an attempt that failed and waited its backoff, or a queued
    job whose task message was lost. Read-only."""
    stuck = _due(now or timezone.now())
    return {
        "jobs": list(
            stuck.filter(sweep=None).order_by("pk").values_list("pk", flat=True)[:DISPATCH_LIMIT]
        ),
        "sweeps": list(
            stuck.exclude(sweep=None)
            .order_by("sweep_id")
            .values_list("sweep_id", flat=True)
            .distinct()[:DISPATCH_LIMIT]
        ),
    }


def submissions_dispatch(*, now: dt.datetime | None = None) -> dict[str, list[int]]:
    """What the beat task enqueues: `submissions_due`, each marked as dispatched (its next
    attempt moved one lease period ahead, compare-and-swap) so a slow queue is not flooded with
    copies every 10 s; if the task never runs, the mark expires and the beat tries again."""
    now = now or timezone.now()
    due = submissions_due(now=now)
    mark = now + _seconds("SUBMIT_LEASE_SECONDS")
    return {
        "jobs": [pk for pk in due["jobs"] if _mark(_due(now).filter(pk=pk), mark)],
        "sweeps": [pk for pk in due["sweeps"] if _mark(_due(now).filter(sweep_id=pk), mark)],
    }


def _mark(rows: QuerySet[Job], mark: dt.datetime) -> bool:
    """Set `submit_next_at` on these rows if they are still due (locked in pk order, as
    submit_lease_take locks them, so the two never deadlock)."""
    with transaction.atomic():
        ids = list(rows.select_for_update().order_by("pk").values_list("pk", flat=True))
        return bool(ids) and bool(Job.objects.filter(pk__in=ids).update(submit_next_at=mark))
