"""Monitoring: bring job rows in line with what the scheduler says (states, pending reasons,
progress, log tail, metrics). Called by a beat task every few seconds; safe to run
concurrently (moves are compare-and-swap) and after any failure (a transient backend error just
leaves the rows as they were until the next poll)."""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone

from allocations.models import Facility

from ..backends.contract import BackendError, Capability, ComputeBackend, Fetched, Observation
from ..backends.registry import backend_for
from ..models import Job
from ..states import job_move_if
from .measurement import job_measurement_record
from .resume import job_resume, preempt_updates
from .sweeps import sweep_advance

log = logging.getLogger(__name__)
S = Job.State
HISTORY_POINTS = 400
# sacct lags squeue; a job unknown to both for this long after submission has vanished.
VANISHED_AFTER = dt.timedelta(minutes=10)


def _late(qs: QuerySet[Job]) -> QuerySet[Job]:
    """Recently succeeded jobs whose metrics were not read yet (see _collect_late_files)."""
    return qs.filter(
        state=S.SUCCEEDED, metrics__isnull=True, finished_at__gte=timezone.now() - LATE_FILES_FOR
    )


def facilities_with_live_jobs() -> list[int]:
    """Facilities with jobs to poll: live ones, or finished ones whose files are still due."""
    jobs = Job.objects.filter(state__in=Job.LIVE).exclude(scheduler_id="")
    ids = (
        jobs.order_by()
        .values("allocation__facility_id")
        .union(
            _late(Job.objects.exclude(scheduler_id="")).order_by().values("allocation__facility_id")
        )
    )
    return sorted({row["allocation__facility_id"] for row in ids})


def jobs_poll(*, facility_id: int) -> dict[str, int]:
    """Observe every live job of one facility and apply what changed. Returns counts.
    Raises nothing for transient backend trouble (logged; the next poll retries)."""
    facility = Facility.objects.get(pk=facility_id)
    runner = backend_for(facility)
    jobs = list(
        Job.objects.select_related("allocation", "sweep")
        .filter(allocation__facility=facility, state__in=Job.LIVE)
        .exclude(scheduler_id="")
    )
    if Capability.OBSERVE not in runner.capabilities:
        return {"jobs": 0, "moved": 0}
    if not jobs:
        _collect_late_files(facility, runner, exclude=set())
        return {"jobs": 0, "moved": 0}
    try:
        seen = runner.observe(facility=facility, jobs=jobs)
    except BackendError as error:
        log.warning("polling %s failed (%s); will retry", facility.slug, error)
        return {"jobs": len(jobs), "moved": 0, "errors": 1}
    # A backend with `resume` (Slurm) is resubmitted by the portal after a preemption; one
    # without (the cloud's) resumes its own tasks and is only observed.
    resumable = Capability.RESUME in runner.capabilities
    moved = 0
    steady: list[Job] = []  # running on, unmoved: their files are read by turns (_by_turns)
    for job in jobs:
        if job.state == S.PREEMPTED and resumable:
            moved += _resume(job)  # its scheduler id is still the ended attempt's
            continue
        observation = seen.get(job.pk)
        if observation is None:
            moved += _maybe_vanished(job)
            continue
        if resumable and observation.state == S.TIMEOUT and job.state in (S.RUNNING, S.PENDING):
            observation = _checkpointed_at_limit(job, observation, runner, facility)
        moved_now = job_observe(job=job, observation=observation, resumable=resumable)
        moved += moved_now
        if job.state == S.RUNNING and not moved_now:
            steady.append(job)
        elif job.state in (S.RUNNING, S.PREEMPTED, *Job.FINAL) and _wants_files(job):
            _collect(job, runner, facility)
        if moved_now and job.state == S.SUCCEEDED and job.metrics is not None:
            # Its metrics.json was read while it still ran (the trainer writes it before it
            # exits), so no read is left to record the run: record it now (idempotent).
            job_measurement_record(job=job)
    for job in _by_turns(steady):
        _collect(job, runner, facility)
        if job.state == S.PREEMPTED and resumable:
            moved += _resume(job)
    moved += _collect_late_files(facility, runner, exclude={j.pk for j in jobs})
    # What this poll read decides a staged sweep's rungs and frees its slots: at once.
    for sweep_id in sorted({j.sweep_id for j in jobs if j.sweep_id and j.sweep and j.sweep.staged}):
        sweep_advance(sweep_id=sweep_id)
    return {"jobs": len(jobs), "moved": moved}


def _by_turns(running: list[Job]) -> list[Job]:
    """The running jobs whose progress and log this poll reads: the FILES_PER_POLL read least
    recently (`polled_at`). A facility with 2,000 running jobs costs the same per poll as one
    with FILES_PER_POLL (one backend read and one row update each); each job's figures are then
    at most ceil(n / FILES_PER_POLL) polls old, and a job someone is watching is read on demand
    (services/logs.py)."""
    budget = settings.PORTAL_POLL_FILES_PER_CYCLE
    oldest = dt.datetime.min.replace(tzinfo=dt.UTC)
    return sorted(running, key=lambda job: (job.polled_at or oldest, job.pk))[:budget]


def _collect(job: Job, runner: ComputeBackend, facility: Facility) -> bool:
    if Capability.FETCH not in runner.capabilities:
        return False
    try:
        job_record_files(job=job, fetched=runner.fetch(facility=facility, job=job))
    except BackendError as error:
        log.warning("reading files of job %s failed (%s); next poll", job.pk, error)
        return False
    return True


# A finished job's files (metrics.json, the log tail) are read on the poll that sees it finish;
# if that read failed (a dropped connection), later polls try again for this long.
LATE_FILES_FOR = dt.timedelta(minutes=10)


def _collect_late_files(facility: Facility, runner: ComputeBackend, *, exclude: set[int]) -> int:
    """Re-read files of recently finished jobs that still lack them (bounded: at most 20)."""
    late = list(
        _late(Job.objects.select_related("allocation", "sweep"))
        .filter(allocation__facility=facility)
        .exclude(pk__in=exclude)
        .exclude(scheduler_id="")[:20]
    )
    for job in late:
        _collect(job, runner, facility)
    return 0


def _checkpointed_at_limit(
    job: Job, observation: Observation, runner: ComputeBackend, facility: Facility
) -> Observation:
    """Slurm's TIMEOUT after the trainer caught SIGTERM and checkpointed (progress.json says
    `preempted`) is resumable: the same observation as `preempted`."""
    try:
        progress = runner.fetch(facility=facility, job=job).progress or {}
    except BackendError:
        return observation
    if progress.get("state") != "preempted":
        return observation
    return Observation(
        state=S.PREEMPTED,
        reason="checkpointed at its time limit",
        exit_code=observation.exit_code,
        elapsed_seconds=observation.elapsed_seconds,
    )


def _resume(job: Job) -> int:
    try:
        return int(job_resume(job=job))
    except BackendError as error:
        log.warning("resuming job %s failed (%s); next poll", job.pk, error)
        return 0


def _wants_files(job: Job) -> bool:
    return job.state == S.RUNNING or job.metrics is None or not job.log_tail


def _maybe_vanished(job: Job) -> int:
    if job.submitted_at and timezone.now() - job.submitted_at > VANISHED_AFTER:
        return int(
            job_move_if(
                job=job,
                to=S.FAILED,
                state_reason="the scheduler no longer knows this job",
                comment="Vanished from the scheduler.",
                finished_at=timezone.now(),
            )
        )
    return 0


def job_observe(*, job: Job, observation: Observation, resumable: bool = False) -> int:
    """Apply one observation: a state move (audited) or a changed pending reason. Returns 1 if
    the state moved. With `resumable` (the backend declares `resume`), a move to `preempted` also
    takes the next attempt's token (services/resume.py) and a running job that Slurm requeued
    under the same id passes through `preempted`."""
    now = timezone.now()
    if observation.state == job.state:
        if observation.reason != job.state_reason:
            Job.objects.filter(pk=job.pk, state=job.state).update(
                state_reason=observation.reason[:300], polled_at=now
            )
            job.state_reason = observation.reason
        return 0
    updates: dict[str, Any] = {"state_reason": observation.reason[:300], "polled_at": now}
    if observation.exit_code is not None:
        updates["exit_code"] = observation.exit_code
    if observation.state == S.RUNNING and not job.started_at:
        updates["started_at"] = now
    if observation.state in Job.FINAL:
        updates["finished_at"] = now
    path = [observation.state]
    # A job may finish between two polls: pass through running so the audit shows it ran.
    if (
        job.state in (S.PENDING, S.PREEMPTED)
        and observation.elapsed_seconds > 0
        and observation.state in (*Job.FINAL, S.PREEMPTED)
        and observation.state != S.CANCELLED
    ):
        path = [S.RUNNING, observation.state]
    comment = observation.reason
    if resumable and observation.state == S.PREEMPTED:
        updates.update(preempt_updates(job, observation))
        comment = f"Preempted ({observation.reason}); resuming from its last checkpoint."
    elif resumable and job.state == S.RUNNING and observation.state == S.PENDING:
        path = [S.PREEMPTED, S.PENDING]  # requeued by Slurm under the same id
        comment = "Requeued by the scheduler; resumes from its last checkpoint."
    moved = 0
    for to in path:
        extra = updates if to == path[-1] else {"started_at": job.started_at or now}
        moved |= job_move_if(job=job, to=to, comment=comment, **extra)
    return int(bool(moved))


def job_record_files(*, job: Job, fetched: Fetched) -> None:
    """Store the progress (appending a loss point to its history), log tail and metrics."""
    updates: dict[str, Any] = {}
    if fetched.progress:
        history = list((job.progress or {}).get("history", []))
        point = _loss_point(fetched.progress)
        if point and (not history or history[-1][0] != point[0]):
            history = (history + [point])[-HISTORY_POINTS:]
        updates["progress"] = {**fetched.progress, "history": history}
        updates.update(_utilisation(fetched.progress))
    if fetched.log_tail is not None:
        updates["log_tail"] = fetched.log_tail[-20000:]
    if fetched.metrics is not None:
        updates["metrics"] = fetched.metrics
    if updates:
        updates["polled_at"] = timezone.now()  # read now: the poll reads others first next time
        Job.objects.filter(pk=job.pk).update(**updates)
        for key, value in updates.items():
            setattr(job, key, value)
    if job.state == S.SUCCEEDED and job.metrics is not None:
        job_measurement_record(job=job)  # every run is a measurement (idempotent)


def _utilisation(progress: dict[str, Any]) -> dict[str, Any]:
    """The trainer's running mean utilisation (GPU through NVML, else CPU), for the reports."""
    found = progress.get("utilisation")
    if not isinstance(found, dict) or found.get("source") not in ("gpu", "cpu"):
        return {}
    try:
        mean = float(found["mean_percent"])
    except (KeyError, TypeError, ValueError):
        return {}
    if not 0 <= mean <= 100:
        return {}
    return {"utilisation_mean": mean, "utilisation_source": found["source"]}


def _loss_point(progress: dict[str, Any]) -> list[float] | None:
    loss, spe = progress.get("loss"), progress.get("steps_per_epoch") or 0
    if not isinstance(loss, (int, float)):
        return None
    step = (max(int(progress.get("epoch") or 1), 1) - 1) * spe + int(progress.get("step") or 0)
    return [step, round(float(loss), 5)]
