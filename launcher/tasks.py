"""Celery tasks of the launcher: ids in, a service call, retry decisions."""
from __future__ import annotations

from celery import shared_task

from .provisioning import allocation_provision


@shared_task(name="launcher.provision_allocation", acks_late=True)
def provision_allocation(allocation_id: int) -> str | None:
    allocation = allocation_provision(allocation_id=allocation_id)
    return allocation.status if allocation else None
