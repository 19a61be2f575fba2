"""Slurm accounts for allocations: the account's name, members and GPU-minute cap (created by
SlurmBackend.provision), blocked when the allocation stops being usable, unblocked when it is
active again, and the cap raised on a top-up. Every function is idempotent; SSH happens outside
any transaction, and nothing here moves the allocation's state."""
from __future__ import annotations

import logging

from allocations.models import Allocation, ProjectMembership

from ..backends.base import check_name
from .connection import slurm_client

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


def allocation_sync_slurm(*, allocation: Allocation) -> str:
    """Bring the account in line with the allocation's state, grant and members: blocked (and
    its jobs cancelled) while suspended, exhausted, expired or closed; unblocked and capped
    while active; the user associations exactly the project's members' cluster logins (plus the
    service user) while the allocation is live. Returns what was done. Transient errors
    propagate (the task retries)."""
    if not allocation.account_name:
        return "nothing to do"
    backend = slurm_client(allocation.facility)
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
