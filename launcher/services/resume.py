"""Preemption: `running -> preempted -> pending`, resuming from the last checkpoint.

A Slurm job that ends resumable (the trainer caught `--signal`/SIGTERM, checkpointed and exited
75; or it stopped at its time limit with progress.json saying `preempted`; or Slurm reports
PREEMPTED or NODE_FAIL) moves to `preempted` with a new token (`<token>-r<n>`, written in the
same compare-and-swap as the move, before any network call). The monitor then resubmits it in
the same folder (the trainer runs with `--resume`), idempotently by that token, if the
allocation is active and its remaining GPU-hours cover the new attempt's time limit; otherwise
the job ends (`timeout` after a checkpoint at its limit, else `failed`) with the reason.
A job Slurm requeues itself (same job id, REQUEUED -> PENDING) passes through `preempted` too.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.utils import timezone

from allocations.models import Allocation
from allocations.selectors import allocation_ledger

from ..backends.contract import BackendError, Capability, Observation
from ..backends.registry import backend_for
from ..models import Job
from ..selectors import check_can_act
from ..states import job_move_if

S = Job.State
MAX_RESUMES = 10
_SUFFIX = re.compile(r"-r\d+$")
CHECKPOINT_EXIT = 75


def resume_token(job: Job) -> str:
    """The token of the job's next attempt: unique, scheduler-safe, stable for retries."""
    sweep = job.sweep if job.sweep_id else None
    base = f"{sweep.token}-c{job.array_index}" if sweep else _SUFFIX.sub("", job.token)
    return f"{base}-r{job.resumes + 1}"


def attempt_hours(job: Job) -> Decimal:
    """What one attempt may use at most: GPUs x its time limit."""
    return (Decimal(job.gpus) * Decimal(job.wall_time_minutes) / 60).quantize(Decimal("0.001"))


def preempt_updates(job: Job, observation: Observation) -> dict[str, Any]:
    """Fields written with the move to `preempted`: the next token, the attempt's GPU-seconds
    kept as prior usage, and the estimate re-based so the reservation is one more attempt."""
    prior = job.prior_gpu_seconds + observation.elapsed_seconds * job.gpus
    prior = max(prior, job.gpu_seconds)  # accounting may already have charged this attempt
    return {
        "token": resume_token(job),
        "resumes": job.resumes + 1,
        "prior_gpu_seconds": prior,
        "gpu_seconds": prior,
        "estimate_gpu_hours": (Decimal(prior) / 3600 + attempt_hours(job)).quantize(
            Decimal("0.001")
        ),
    }


def resume_refusal(job: Job) -> str:
    """Why the job cannot be resubmitted now ('' if it can). Locks the allocation row so two
    resumes or a resume and a launch cannot spend the same hours. Database only."""
    if job.resumes > MAX_RESUMES:
        return f"preempted {job.resumes} times; not resumed again"
    with transaction.atomic():
        allocation = Allocation.objects.select_for_update(of=("self",)).get(pk=job.allocation_id)
        if allocation.status != Allocation.Status.ACTIVE:
            return f"the allocation is {allocation.get_status_display().lower()}"
        ledger = allocation_ledger(allocation.pk)
        # The reservation already holds this job's next attempt (preempt_updates re-based it).
        left = (
            ledger.gpu_seconds_granted - ledger.gpu_seconds_used - ledger.gpu_seconds_reserved
        ) / 3600
        if left < 0:
            return (
                f"the next attempt needs up to {attempt_hours(job)} GPU-hours but only "
                f"{max(left + attempt_hours(job), Decimal(0)):.3f} are left"
            )
    return ""


def job_resume(*, job: Job, by: Any = None) -> bool:
    """Resubmit a preempted job from its checkpoint (network outside any transaction; safe to
    repeat: the scheduler looks the job's current token up first). Returns True if it moved.
    `by` None is the portal's own monitor; a person must be a member of the job's project or
    staff (NotVisible, 404; Forbidden, 403, for reviewers), the rule of job_cancel.
    Transient backend errors propagate (the next poll retries with the same token)."""
    if by is not None:
        check_can_act(by, job.allocation, what="resume its jobs")
    if job.state != S.PREEMPTED:
        return False
    facility = job.allocation.facility
    runner = backend_for(facility)
    if Capability.RESUME not in runner.capabilities:
        return False
    refusal = resume_refusal(job)
    if refusal:
        end = S.TIMEOUT if job.exit_code == CHECKPOINT_EXIT else S.FAILED
        return job_move_if(
            job=job,
            to=end,
            comment=f"Not resumed: {refusal}.",
            state_reason=f"not resumed: {refusal}"[:300],
            finished_at=timezone.now(),
        )
    try:
        submission = runner.resume(facility=facility, job=job, token=job.token)
    except BackendError as error:
        if not error.permanent:
            raise
        return job_move_if(
            job=job,
            to=S.FAILED,
            comment=f"Resubmission refused: {error.message}",
            state_reason=f"resubmission refused: {error.message}"[:300],
            finished_at=timezone.now(),
        )
    note = "found by its token" if submission.already_submitted else "submitted"
    return job_move_if(
        job=job,
        to=S.PENDING,
        scheduler_id=submission.scheduler_id,
        output_path=submission.output_path,
        submitted_at=timezone.now(),
        exit_code=None,
        state_reason="",
        comment=f"Resumed from its last checkpoint as scheduler id "
        f"{submission.scheduler_id} (attempt {job.resumes + 1}, token {job.token}, {note}).",
    )
