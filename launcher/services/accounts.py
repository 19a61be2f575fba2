"""Keep a backend's account in line with its allocation (blocked, unblocked, re-capped)."""
from __future__ import annotations

from allocations.models import Allocation

from ..backends.registry import Capability, backend_for


def allocation_sync(*, allocation: Allocation) -> str:
    """Ask the facility's backend to match the account to the allocation's state and grant,
    where it keeps an account (`account_sync`). Idempotent; transient errors propagate (the
    task retries). Returns what was done."""
    backend = backend_for(allocation.facility)
    if Capability.ACCOUNT_SYNC not in backend.capabilities:
        return "nothing to do"
    return backend.sync_account(allocation=allocation)


def project_sync_members(*, project_id: int) -> dict[int, str]:
    """After a member was added or removed: bring the account of each of the project's live
    allocations in line, members included (on Slurm: associations added, removed members'
    deleted and their jobs there cancelled). Allocations still provisioning get their members
    when their account is created. Network I/O here, outside any transaction; idempotent.
    Returns {allocation id: what was done}."""
    allocations = (Allocation.objects.select_related("facility", "project")
                   .filter(project_id=project_id, status__in=Allocation.LIVE)
                   .exclude(status=Allocation.Status.PROVISIONING).exclude(account_name=""))
    return {allocation.pk: allocation_sync(allocation=allocation) for allocation in allocations}
