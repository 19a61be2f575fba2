"""Turn a granted allocation into usable compute on its facility's backend: the one place that
decides, for every backend, whether an allocation is activated, failed or retried, and that
records what the backend made (it returns facts and never writes the database)."""

from __future__ import annotations

import logging

from allocations.models import Allocation
from allocations.services import allocation_activate, allocation_await_staff, allocation_fail

from .backends.contract import BackendError, Capability
from .backends.registry import backend_for
from .services.accounts import account_members_record

log = logging.getLogger(__name__)


def allocation_provision(*, allocation_id: int, last_try: bool = False) -> Allocation | None:
    """Provision one allocation; idempotent: an allocation no longer provisioning is left as
    it is. A facility the portal cannot provision on (the `manual` backend, or a backend not
    configured yet) waits for staff, who are told by email; it never fails for that.

    The backend returns what it made (`Provisioned`): its members' outcome is recorded
    (account_members_record), then its own rows (`Provisioned.record`: the cloud's cluster
    row), and the allocation is activated with the account name. Or it raises a BackendError:
    a permanent one fails the allocation with the reason; a transient one propagates so the
    task retries, and on its `last_try` fails the allocation too."""
    allocation = (
        Allocation.objects.select_related("facility", "project").filter(pk=allocation_id).first()
    )
    if allocation is None or allocation.status != Allocation.Status.PROVISIONING:
        return allocation
    backend = backend_for(allocation.facility)
    if Capability.PROVISION not in backend.capabilities:
        return allocation_await_staff(
            allocation=allocation,
            reason=f"{allocation.facility.name} is not connected to the portal: staff will "
            "activate this allocation by hand.",
        )
    try:
        provisioned = backend.provision(allocation=allocation)
    except BackendError as error:
        if not error.permanent and not last_try:
            raise
        what = "could not be set up" if error.permanent else "is unreachable"
        log.warning("allocation %s: %s", allocation.pk, error)
        return allocation_fail(
            allocation=allocation, reason=f"The {backend.name} account {what}: {error.message}"
        )
    account_members_record(allocation=allocation, members=provisioned.members, done="")
    provisioned.record(allocation=allocation)
    return allocation_activate(allocation=allocation, account_name=provisioned.account)
