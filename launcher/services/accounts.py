"""Keep a backend's account in line with its allocation (blocked, unblocked, re-capped, its
members), and record what the backend says of the members (it never writes the database)."""

from __future__ import annotations

import logging

from allocations.models import Allocation
from allocations.services import project_members_sync_record

from ..backends.contract import BackendError, Capability, MemberSync
from ..backends.registry import backend_for

log = logging.getLogger(__name__)


def account_members_record(*, allocation: Allocation, members: MemberSync | None, done: str) -> str:
    """Record a provision's or sync's member outcome (`members`; None: the backend synced no
    members): the members whose login was left out keep the reason on their membership, are
    audited once on the project and listed on the staff home; the others are cleared. Returns
    `done`, saying how many were left out."""
    if members is None:
        return done
    project_members_sync_record(project_id=allocation.project_id, refused=dict(members.refused))
    if not members.refused:
        return done
    return f"{done}; {len(members.refused)} member(s) left out (see the staff home)"


def allocation_sync(*, allocation: Allocation) -> str:
    """Ask the facility's backend to match the account to the allocation's state and grant,
    where it keeps an account (`account_sync`), and record its members' outcome. Idempotent;
    transient errors propagate (the task retries). Returns what was done."""
    backend = backend_for(allocation.facility)
    if Capability.ACCOUNT_SYNC not in backend.capabilities:
        return "nothing to do"
    synced = backend.sync_account(allocation=allocation)
    return account_members_record(allocation=allocation, members=synced.members, done=synced.done)


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
    allocations = (
        Allocation.objects.select_related("facility", "project")
        .filter(project_id=project_id, status__in=Allocation.LIVE)
        .exclude(status=Allocation.Status.PROVISIONING)
        .exclude(account_name="")
    )
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
