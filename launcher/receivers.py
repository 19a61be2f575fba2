"""React to allocation facts sent by the allocations app (after commit, ids only)."""
from __future__ import annotations

from django.dispatch import receiver

from allocations.signals import allocation_provisioning

from . import tasks


@receiver(allocation_provisioning, dispatch_uid="launcher.provision")
def _provision(sender, allocation_id: int, **kwargs) -> None:
    tasks.provision_allocation.delay(allocation_id)
