"""Slurm accounts for allocations: created on activation with the members and a GPU-minute cap,
blocked when the allocation stops being usable, unblocked when it is active again, and the cap
raised on a top-up. Every function is idempotent; SSH happens outside any transaction."""
from __future__ import annotations

import logging

from allocations.models import Allocation, ProjectMembership
from allocations.services import allocation_activate, allocation_fail

from ..backends.base import BackendError, check_name
from .connection import slurm_backend

log = logging.getLogger(__name__)


def gpu_minutes(allocation: Allocation) -> int:
    """The cap: granted GPU-hours x 60, as whole minutes."""
    return int(allocation.gpu_hours * 60)


def account_name(allocation: Allocation) -> str:
    return allocation.account_name or allocation.default_account_name()


def member_usernames(allocation: Allocation) -> list[str]:
    """Cluster usernames of the project's members (those who gave one)."""
    return sorted(set(ProjectMembership.objects.filter(project_id=allocation.project_id)
                      .exclude(cluster_username="").values_list("cluster_username", flat=True)))


def allocation_provision_slurm(*, allocation: Allocation) -> Allocation:
    """Create (or complete) the allocation's Slurm account, then mark it active.

    A permanent BackendError (bad host key, invalid name, refused) fails the allocation with
    the reason; a transient one propagates so the task retries with backoff. Re-running after
    success changes nothing on the cluster (ensure_account only fixes what differs).
    """
    name = account_name(allocation)
    try:
        check_name(name, "account")
        for user in member_usernames(allocation):
            check_name(user, "cluster username")
        slurm_backend(allocation.facility).ensure_account(
            name=name, users=member_usernames(allocation), gpu_minutes=gpu_minutes(allocation))
    except BackendError as error:
        if error.transient:
            raise
        return allocation_fail(allocation=allocation,
                               reason=f"Slurm account {name} could not be set up: {error.message}")
    return allocation_activate(allocation=allocation, account_name=name)


def allocation_sync_slurm(*, allocation: Allocation) -> str:
    """Bring the account in line with the allocation's state, grant and members: blocked (and
    its jobs cancelled) while suspended, exhausted, expired or closed; unblocked and capped
    while active; the user associations exactly the project's members' cluster logins (plus the
    service user) while the allocation is live. Returns what was done. Transient errors
    propagate (the task retries)."""
    if not allocation.account_name:
        return "nothing to do"
    backend = slurm_backend(allocation.facility)
    if allocation.status in Allocation.LIVE:
        users = member_usernames(allocation)
        for user in users:
            check_name(user, "cluster username")
        backend.sync_users(name=allocation.account_name, users=users)
    if allocation.status in Allocation.BLOCKED:
        backend.block_account(name=allocation.account_name)
        return "blocked"
    if allocation.status == Allocation.Status.ACTIVE:
        backend.set_cap(name=allocation.account_name, gpu_minutes=gpu_minutes(allocation))
        backend.unblock_account(name=allocation.account_name)
        return "active"
    return "nothing to do"
