"""Turn a granted allocation into usable compute on its facility's backend."""
from __future__ import annotations

import logging

from allocations.models import Allocation
from allocations.services import allocation_await_staff

from .backends.registry import Capability, backend_for

log = logging.getLogger(__name__)


def allocation_provision(*, allocation_id: int) -> Allocation | None:
    """Provision one allocation; idempotent: an allocation no longer provisioning is left as
    it is. A facility the portal cannot provision on (the `manual` backend, or a backend not
    configured yet) waits for staff, who are told by email; it never fails for that."""
    allocation = Allocation.objects.select_related("facility", "project").filter(
        pk=allocation_id
    ).first()
    if allocation is None or allocation.status != Allocation.Status.PROVISIONING:
        return allocation
    backend = backend_for(allocation.facility)
    if Capability.PROVISION not in backend.capabilities:
        return allocation_await_staff(
            allocation=allocation,
            reason=f"{allocation.facility.name} is not connected to the portal: staff will "
                   "activate this allocation by hand.")
    return backend.provision(allocation=allocation)
