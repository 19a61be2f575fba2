"""Celery tasks of the launcher: ids in, a service call, retry decisions. All idempotent.

Beat schedule (settings.CELERY_BEAT_SCHEDULE, see docs/launcher.md):
    launcher.poll_jobs every 10 s, launcher.ingest_usage every 10 s, launcher.heartbeat every
    15 s (launcher/heartbeat.py), launcher.prune_idempotency_keys and launcher.roll_job_months
    hourly.
"""

from __future__ import annotations

import logging

from celery import shared_task
from celery.signals import worker_ready
from django.db import connections

from allocations.models import Allocation
from core.locks import exclusive

from . import heartbeat as worker_heartbeat
from . import idempotency, services
from .backends.contract import BackendError
from .job_count import job_count_check
from .job_months import job_months_rebuild
from .provisioning import allocation_provision

log = logging.getLogger(__name__)

_RETRY = dict(
    autoretry_for=(BackendError,),
    retry_backoff=2,
    retry_backoff_max=120,
    retry_jitter=True,
    max_retries=8,
    acks_late=True,
)


@shared_task(name="launcher.provision_allocation", bind=True, **_RETRY)
def provision_allocation(self, allocation_id: int) -> str | None:
    """Provision an allocation (launcher/provisioning.py decides activate / fail / retry)."""
    allocation = allocation_provision(
        allocation_id=allocation_id, last_try=self.request.retries >= self.max_retries
    )
    return allocation.status if allocation else None


@shared_task(name="launcher.sync_allocation_account", **_RETRY)
def sync_allocation_account(allocation_id: int) -> str:
    """Block, unblock or re-cap the allocation's account to match its state and grant."""
    allocation = Allocation.objects.select_related("facility").filter(pk=allocation_id).first()
    if allocation is None:
        return "gone"
    try:
        return services.allocation_sync(allocation=allocation)
    except BackendError as error:
        if not error.permanent:
            raise
        return _permanent(f"allocation {allocation_id}", error)


@shared_task(name="launcher.sync_project_members", **_RETRY)
def sync_project_members(project_id: int) -> dict[int, str] | str:
    """Add and remove the project's members on the backend accounts of its live allocations."""
    try:
        return services.project_sync_members(project_id=project_id)
    except BackendError as error:
        if not error.permanent:
            raise
        return _permanent(f"project {project_id}", error)


def _permanent(what: str, error: BackendError) -> str:
    """A permanent error is not retried like a transient one (retrying cannot help): logged
    and returned, once."""
    log.warning("account sync of %s refused: %s", what, error.message)
    return f"refused: {error.message}"


@shared_task(name="launcher.failing_jobs_digest")
@exclusive("launcher.failing_jobs_digest")
def failing_jobs_digest() -> int:
    """Beat (hourly): one email to staff listing jobs that failed since the last one."""
    return services.failing_jobs_digest_send()


# No autoretry: the service retries through its lease (backoff, deadline) and the beat
# re-enqueues a submission only when its next attempt is due (services/submission.py).
@shared_task(name="launcher.submit_job", acks_late=True)
def submit_job(job_id: int) -> str | None:
    job = services.job_submit(job_id=job_id)
    return job.state if job else None


@shared_task(name="launcher.submit_sweep", acks_late=True)
def submit_sweep(sweep_id: int) -> int | None:
    sweep = services.sweep_submit(sweep_id=sweep_id)
    return sweep.pk if sweep else None


@shared_task(name="launcher.poll_jobs")
@exclusive("launcher.poll_jobs")
def poll_jobs() -> dict[str, int]:
    """Beat: poll every facility with live jobs, advance staged sweeps, and re-enqueue submissions nobody owns whose
    next attempt is due (an expired lease, a backoff over, a lost message)."""
    moved = 0
    for facility_id in services.facilities_with_live_jobs():
        moved += services.jobs_poll(facility_id=facility_id).get("moved", 0)
    # Staged sweeps (early stopping, search): judge rungs, ask for trials, release cells.
    for sweep_id in services.sweeps_to_advance():
        services.sweep_advance(sweep_id=sweep_id)
    stalled = services.submissions_dispatch()
    for job_id in stalled["jobs"]:
        submit_job.delay(job_id)
    for sweep_id in stalled["sweeps"]:
        submit_sweep.delay(sweep_id)
    return {"moved": moved, "resubmitted": len(stalled["jobs"]) + len(stalled["sweeps"])}


@shared_task(name="launcher.ingest_usage")
@exclusive("launcher.ingest_usage")
def ingest_usage() -> int:
    """Beat: charge every allocation owing usage (services.usage_ingest_all)."""
    return services.usage_ingest_all()


@shared_task(name="launcher.roll_job_months")
@exclusive("launcher.roll_job_months")
def roll_job_months() -> int:
    """Beat (hourly): the usage report's job figures of settled months (launcher/job_months.py),
    and the jobs' kept total checked against the rows (launcher/job_count.py). Returns the rows
    written."""
    job_count_check()
    return job_months_rebuild()


@shared_task(name="launcher.heartbeat", ignore_result=True)
def heartbeat() -> None:
    """Beat: a worker ran this, so the queue is being served (launcher/heartbeat.py)."""
    worker_heartbeat.beat()


@worker_ready.connect
def _worker_started(**_: object) -> None:
    """A worker that just started counts at once, not at the beat's next heartbeat. Runs in
    the worker's main process: its connection is closed again, so no pool process forked
    later inherits it."""
    try:
        worker_heartbeat.beat()
    finally:
        connections.close_all()


@shared_task(name="launcher.prune_idempotency_keys", ignore_result=True)
@exclusive("launcher.prune_idempotency_keys")
def prune_idempotency_keys() -> int:
    """Beat (hourly): forget keys past their 24 hours (launcher/idempotency.py)."""
    return idempotency.prune()
