"""Celery tasks of notebook sessions: ids in, a service call, retry decisions. All idempotent.

Beat: notebooks.sync every 15 s (settings.CELERY_BEAT_SCHEDULE).
"""

from __future__ import annotations

from celery import shared_task

from core.locks import exclusive

from ..backends.contract import BackendError
from . import services, sync
from .hubapi import HubStarting

_RETRY = dict(
    autoretry_for=(BackendError,),
    retry_backoff=2,
    retry_backoff_max=60,
    retry_jitter=True,
    max_retries=6,
    acks_late=True,
)


# A hub still starting is waited for by time (services.notebook_spawn fails the session once
# NOTEBOOK_HUB_START_WAIT_SECONDS have passed), asked again every 1-5 s; this count is only a
# backstop (an eager run retries without waiting). Other transient trouble keeps its own count.
HUB_WAIT_TRIES = 60
SPAWN_TRIES = 6


@shared_task(name="notebooks.spawn", bind=True, acks_late=True)
def spawn(self, session_id: int, hub_waits: int = 0) -> str:
    """Start the session's server on the hub. A hub still starting is asked again every few
    seconds (`hub_waits` counts those tries); other transient trouble is retried with
    exponential backoff, `SPAWN_TRIES` times; on the last try of either the service fails the
    session with the reason."""
    tries = self.request.retries - hub_waits
    try:
        return services.notebook_spawn(
            session_id=session_id, last_try=tries >= SPAWN_TRIES or hub_waits >= HUB_WAIT_TRIES
        )
    except HubStarting as error:
        raise self.retry(
            exc=error,
            args=(session_id,),
            kwargs={"hub_waits": hub_waits + 1},
            countdown=min(2**hub_waits, 5),
            max_retries=self.request.retries + 1,
        ) from error
    except BackendError as error:  # transient: the service failed the session on the others
        raise self.retry(
            exc=error,
            args=(session_id,),
            kwargs={"hub_waits": hub_waits},
            countdown=min(2 ** (tries + 1), 60),
            max_retries=self.request.retries + 1,
        ) from error


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
@exclusive("notebooks.sync")
def sync_all() -> dict[str, int]:
    """Follow the hub: states, hours and idle limits, charges (notebooks/sync.py)."""
    return sync.notebook_sync_all()
