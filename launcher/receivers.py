"""React to allocation facts sent by the allocations app (after commit, ids only)."""

from __future__ import annotations

from django.dispatch import receiver

from allocations.models import Allocation
from allocations.signals import (
    allocation_grant_changed,
    allocation_status_changed,
    project_members_changed,
)
from core.tasks import enqueue

from . import tasks

# Moves after which the backend account must be blocked or opened again.
_SYNC_TO = {*Allocation.BLOCKED, Allocation.Status.ACTIVE}


@receiver(allocation_status_changed, dispatch_uid="launcher.status_changed")
def _status_changed(sender, allocation_id: int, from_state: str, to_state: str, **kwargs) -> None:
    # provisioning -> active already made the account as it should be.
    if to_state in _SYNC_TO and from_state not in ("provisioning",):
        tasks.sync_allocation_account.delay(allocation_id)
    # Notebook sessions stop promptly too (the hub's servers are not behind the account).
    if to_state in Allocation.BLOCKED:
        enqueue("notebooks.stop_allocation", allocation_id)


@receiver(allocation_grant_changed, dispatch_uid="launcher.grant_changed")
def _grant_changed(sender, allocation_id: int, **kwargs) -> None:
    tasks.sync_allocation_account.delay(allocation_id)


@receiver(project_members_changed, dispatch_uid="launcher.members_changed")
def _members_changed(sender, project_id: int, **kwargs) -> None:
    tasks.sync_project_members.delay(project_id)
