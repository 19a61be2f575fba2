"""Slurm accounts for allocations: created on activation with the members and a GPU-minute cap,
blocked when the allocation stops being usable, unblocked when it is active again, and the cap
raised on a top-up. Every function is idempotent; SSH happens outside any transaction."""
from __future__ import annotations

import logging

from allocations.models import Allocation, ProjectMembership
from allocations.services import (
    allocation_activate, allocation_fail, project_members_sync_record,
)

from ..backends.base import BackendError, check_cluster_username, check_name
from .connection import slurm_backend

log = logging.getLogger(__name__)


def gpu_minutes(allocation: Allocation) -> int:
    """The cap: granted GPU-hours x 60, as whole minutes."""
    return int(allocation.gpu_hours * 60)


def account_name(allocation: Allocation) -> str:
    return allocation.account_name or allocation.default_account_name()


def member_logins(allocation: Allocation) -> tuple[list[str], dict[int, str]]:
    """(the project's members' cluster logins a scheduler accepts, {membership id: why not}
    for the others). One member's bad login never stops the account's other work: it is left
    out, recorded on the membership and shown on the staff home until it is fixed."""
    rows = (ProjectMembership.objects.filter(project_id=allocation.project_id)
            .exclude(cluster_username="").values_list("pk", "cluster_username"))
    logins, refused = set(), {}
    for pk, login in rows:
        try:
            logins.add(check_cluster_username(login))
        except BackendError as error:
            refused[pk] = error.message
    return sorted(logins), refused


def member_usernames(allocation: Allocation) -> list[str]:
    """Cluster usernames of the project's members (those who gave a valid one)."""
    return member_logins(allocation)[0]


def _with_members(allocation: Allocation, done: str, refused: dict[int, str]) -> str:
    project_members_sync_record(project_id=allocation.project_id, refused=refused)
    if not refused:
        return done
    return f"{done}; {len(refused)} member(s) left out (see the staff home)"


def allocation_provision_slurm(*, allocation: Allocation) -> Allocation:
    """Create (or complete) the allocation's Slurm account, then mark it active.

    A permanent BackendError (bad host key, invalid account name, refused) fails the allocation
    with the reason; a transient one propagates so the task retries with backoff. A member
    whose login the scheduler cannot take is left out and recorded (member_logins), never a
    reason to fail the account. Re-running after success changes nothing on the cluster
    (ensure_account only fixes what differs).
    """
    name = account_name(allocation)
    users, refused = member_logins(allocation)
    try:
        check_name(name, "account")
        slurm_backend(allocation.facility).ensure_account(
            name=name, users=users, gpu_minutes=gpu_minutes(allocation))
    except BackendError as error:
        if error.transient:
            raise
        return allocation_fail(allocation=allocation,
                               reason=f"Slurm account {name} could not be set up: {error.message}")
    _with_members(allocation, "", refused)
    return allocation_activate(allocation=allocation, account_name=name)


def allocation_sync_slurm(*, allocation: Allocation) -> str:
    """Bring the account in line with the allocation's state, grant and members: blocked (and
    its jobs cancelled) while suspended, exhausted, expired or closed; unblocked and capped
    while active; then the user associations exactly the project's members' valid cluster
    logins (plus the service user) while the allocation is live. The state comes first and a
    member's bad login is left out (member_logins), so neither can stop a suspension, a
    block, a new cap or a removal. Returns what was done. Transient errors propagate (the
    task retries)."""
    if not allocation.account_name:
        return "nothing to do"
    backend = slurm_backend(allocation.facility)
    done = "nothing to do"
    if allocation.status in Allocation.BLOCKED:
        backend.block_account(name=allocation.account_name)
        done = "blocked"
    elif allocation.status == Allocation.Status.ACTIVE:
        backend.set_cap(name=allocation.account_name, gpu_minutes=gpu_minutes(allocation))
        backend.unblock_account(name=allocation.account_name)
        done = "active"
    if allocation.status not in Allocation.LIVE:
        return done
    users, refused = member_logins(allocation)
    backend.sync_users(name=allocation.account_name, users=users)
    return _with_members(allocation, done, refused)
