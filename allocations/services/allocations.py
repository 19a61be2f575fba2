"""The allocation life cycle: provisioning -> active | failed; active <-> suspended;
active -> exhausted | expired; any -> closed. Backends learn of changes through signals sent
after commit (see allocations/signals.py)."""
from __future__ import annotations

import datetime as dt
from decimal import Decimal

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from .. import signals
from ..models import Allocation
from ..states import ALLOCATION_MOVES
from ..transitions import record_event, transition

Status = Allocation.Status


def _move(allocation: Allocation, *, to: str, by=None, comment: str = "", **updates) -> Allocation:
    old = allocation.status
    transition(allocation, to=to, table=ALLOCATION_MOVES, actor=by, comment=comment, **updates)
    transaction.on_commit(
        lambda: signals.allocation_status_changed.send(
            Allocation, allocation_id=allocation.pk, from_state=old, to_state=to
        )
    )
    return allocation


@transaction.atomic
def allocation_activate(*, allocation: Allocation, account_name: str = "", by=None) -> Allocation:
    """The backend is ready (account created, cap set): the allocation can be used."""
    return _move(allocation, to=Status.ACTIVE, by=by, status_reason="",
                 account_name=account_name or allocation.account_name,
                 activated_at=timezone.now(), comment="Ready to use.")


@transaction.atomic
def allocation_fail(*, allocation: Allocation, reason: str) -> Allocation:
    """Provisioning could not be done; the reason is kept for admins and the requester."""
    return _move(allocation, to=Status.FAILED, status_reason=reason, comment=reason)


@transaction.atomic
def allocation_reprovision(*, allocation: Allocation, by) -> Allocation:
    """Try provisioning a failed allocation again (admins, once the cause is fixed)."""
    _move(allocation, to=Status.PROVISIONING, by=by, status_reason="")
    transaction.on_commit(
        lambda: signals.allocation_provisioning.send(Allocation, allocation_id=allocation.pk)
    )
    return allocation


@transaction.atomic
def allocation_suspend(*, allocation: Allocation, by, comment: str = "") -> Allocation:
    """Stop all use for now: backends block submission and cancel running work."""
    return _move(allocation, to=Status.SUSPENDED, by=by, comment=comment)


@transaction.atomic
def allocation_resume(*, allocation: Allocation, by, comment: str = "") -> Allocation:
    return _move(allocation, to=Status.ACTIVE, by=by, comment=comment)


@transaction.atomic
def allocation_exhaust(*, allocation: Allocation) -> Allocation:
    """Usage reached the grant (system move)."""
    return _move(allocation, to=Status.EXHAUSTED, comment="All granted GPU-hours are used.")


@transaction.atomic
def allocation_expire(*, allocation: Allocation) -> Allocation:
    """The end date passed (system move)."""
    return _move(allocation, to=Status.EXPIRED, comment=f"Ended on {allocation.end_date}.")


@transaction.atomic
def allocation_close(*, allocation: Allocation, by=None, comment: str = "") -> Allocation:
    return _move(allocation, to=Status.CLOSED, by=by, comment=comment)


def allocation_top_up(
    *, allocation: Allocation, gpu_hours: int, by, end_date: dt.date | None = None
) -> Allocation:
    """Add GPU-hours (and extend the end date if later); an exhausted allocation is active
    again. Runs inside the approving transaction."""
    updates = {"gpu_hours": F("gpu_hours") + Decimal(gpu_hours), "alerted_thresholds": []}
    if end_date and end_date > allocation.end_date:
        updates["end_date"] = end_date
    Allocation.objects.filter(pk=allocation.pk).update(**updates)
    allocation.refresh_from_db()
    record_event(allocation, actor=by, from_state=allocation.status, to_state=allocation.status,
                 comment=f"Top-up of {gpu_hours} GPU-hours.")
    if allocation.status == Status.EXHAUSTED:
        _move(allocation, to=Status.ACTIVE, by=by, comment="Active again after a top-up.")
    transaction.on_commit(
        lambda: signals.allocation_grant_changed.send(Allocation, allocation_id=allocation.pk)
    )
    return allocation
