"""Keep a backend's account in line with its allocation (blocked, unblocked, re-capped)."""
from __future__ import annotations

import logging

from allocations.models import Allocation

from ..backends.base import BackendError
from ..backends.registry import Capability, backend_for

log = logging.getLogger(__name__)


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
    Returns {allocation id: what was done}.

    One allocation's failure never skips the others: each is tried; a permanent error is
    reported in the result (retrying cannot help), and if any was transient a transient
    BackendError is raised after all were tried, so the task retries (every step is
    idempotent)."""
    allocations = (Allocation.objects.select_related("facility", "project")
                   .filter(project_id=project_id, status__in=Allocation.LIVE)
                   .exclude(status=Allocation.Status.PROVISIONING).exclude(account_name=""))
    done: dict[int, str] = {}
    transient: list[str] = []
    for allocation in allocations:
        try:
            done[allocation.pk] = allocation_sync(allocation=allocation)
        except BackendError as error:
            log.warning("members of allocation %s not synced: %s", allocation.pk, error)
            done[allocation.pk] = f"failed: {error.message}"
            if not error.permanent:
                transient.append(f"#{allocation.pk}: {error.message}")
    if transient:
        raise BackendError("members not synced on " + "; ".join(transient), permanent=False)
    return done
