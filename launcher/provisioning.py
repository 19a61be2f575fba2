"""Turn a granted allocation into usable compute on its facility's backend."""
from __future__ import annotations

import logging

from allocations.models import Allocation, Facility
from allocations.services import allocation_activate, allocation_fail

log = logging.getLogger(__name__)


def allocation_provision(*, allocation_id: int) -> Allocation | None:
    """Provision one allocation; idempotent: an allocation no longer provisioning is left as
    it is. The local backend needs no account, so it becomes active at once."""
    allocation = Allocation.objects.select_related("facility", "project").filter(
        pk=allocation_id
    ).first()
    if allocation is None or allocation.status != Allocation.Status.PROVISIONING:
        return allocation
    backend = allocation.facility.backend
    if backend == Facility.Backend.LOCAL:
        return allocation_activate(allocation=allocation,
                                   account_name=allocation.default_account_name())
    if backend == Facility.Backend.MANUAL:
        return allocation  # staff activate it from the admin once the subscription exists
    handler = PROVISIONERS.get(backend)
    if handler is None:
        return allocation_fail(allocation=allocation,
                               reason=f"No provisioner for the {backend} backend.")
    return handler(allocation)


# Backends register their provisioning function here (slurm, aws).
PROVISIONERS: dict[str, object] = {}
