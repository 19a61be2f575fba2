"""Celery tasks of notebook sessions: ids in, a service call, retry decisions. All idempotent.

Beat: notebooks.sync every 15 s (settings.CELERY_BEAT_SCHEDULE).
"""

from __future__ import annotations

from celery import shared_task

from ..backends.contract import BackendError
from . import services, sync

_RETRY = dict(
    autoretry_for=(BackendError,),
    retry_backoff=2,
    retry_backoff_max=60,
    retry_jitter=True,
    max_retries=6,
    acks_late=True,
)


@shared_task(name="notebooks.spawn", bind=True, **_RETRY)
def spawn(self, session_id: int) -> str:
    """Start the session's server on the hub; on the last try a transient error fails it."""
    return services.notebook_spawn(
        session_id=session_id, last_try=self.request.retries >= self.max_retries
    )


@shared_task(name="notebooks.stop", **_RETRY)
def stop(session_id: int) -> str:
    """Stop the session's server on the hub and, once it has stopped, settle and charge it."""
    outcome = services.notebook_hub_stop(session_id=session_id)
    if outcome == "stopped":
        session = sync.NotebookSession.objects.select_related("allocation__facility", "user").get(
            pk=session_id
        )
        return sync.notebook_settle(session=session)
    return outcome


@shared_task(name="notebooks.stop_allocation")
def stop_allocation(allocation_id: int) -> int:
    """Stop the live sessions of an allocation that may no longer run work."""
    return sync.notebook_stop_allocation(allocation_id=allocation_id)


@shared_task(name="notebooks.sync")
def sync_all() -> dict[str, int]:
    """Follow the hub: states, hours and idle limits, charges (notebooks/sync.py)."""
    return sync.notebook_sync_all()
