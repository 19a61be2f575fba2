"""The allocation life cycle: provisioning -> active | failed; active <-> suspended;
active -> exhausted | expired; any -> closed. Backends learn of changes through signals sent
after commit (see allocations/signals.py)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from core.errors import Forbidden
from core.tasks import enqueue

from .. import signals
from ..models import Allocation
from ..notifications import notify_after_commit
from ..roles import is_staff
from ..states import ALLOCATION_MOVES
from ..transitions import record_event, transition

if TYPE_CHECKING:
    from ..roles import User

#: The Celery task that turns a granted allocation into compute on its facility's backend
#: (launcher/provisioning.py), enqueued by name after the commit.
PROVISION_TASK = "launcher.provision_allocation"

Status = Allocation.Status


def _move(
    allocation: Allocation,
    *,
    to: str,
    by: User | None = None,
    comment: str = "",
    notify: str = "",
    **updates: Any,
) -> Allocation:
    old = allocation.status
    event = transition(
        allocation, to=to, table=ALLOCATION_MOVES, actor=by, comment=comment, **updates
    )
    transaction.on_commit(
        lambda: signals.allocation_status_changed.send(
            Allocation, allocation_id=allocation.pk, from_state=old, to_state=to
        )
    )
    if notify:
        notify_after_commit(notify, event.pk)
    return allocation


@transaction.atomic
def allocation_activate(
    *, allocation: Allocation, account_name: str = "", by: User | None = None
) -> Allocation:
    """The backend is ready (account created, cap set): the allocation can be used."""
    return _move(
        allocation,
        to=Status.ACTIVE,
        by=by,
        status_reason="",
        account_name=account_name or allocation.account_name,
        activated_at=timezone.now(),
        comment="Ready to use.",
    )


@transaction.atomic
def allocation_fail(*, allocation: Allocation, reason: str) -> Allocation:
    """Provisioning could not be done; the reason is kept for admins and the requester, and
    staff are emailed (they repair the cause and retry provisioning)."""
    return _move(
        allocation,
        to=Status.FAILED,
        status_reason=reason,
        comment=reason,
        notify="allocation_failed",
    )


@transaction.atomic
def allocation_await_staff(*, allocation: Allocation, reason: str) -> Allocation:
    """The facility cannot be provisioned by the portal (a manual backend, or one not
    configured yet): the allocation stays `provisioning` with the reason, audited, and staff
    are emailed to activate it by hand. Idempotent: a second call with the same reason (a task
    retry) records and sends nothing."""
    updated = (
        Allocation.objects.filter(pk=allocation.pk, status=Status.PROVISIONING)
        .exclude(status_reason=reason)
        .update(status_reason=reason)
    )
    allocation.status_reason = reason if updated else allocation.status_reason
    if updated:
        event = record_event(
            allocation,
            actor=None,
            from_state=Status.PROVISIONING,
            to_state=Status.PROVISIONING,
            comment=reason,
        )
        notify_after_commit("allocation_waiting", event.pk)
    return allocation


@transaction.atomic
def allocation_reprovision(*, allocation: Allocation, by: User | None) -> Allocation:
    """Try provisioning a failed allocation again (admins, once the cause is fixed)."""
    _move(allocation, to=Status.PROVISIONING, by=by, status_reason="")
    enqueue(PROVISION_TASK, allocation.pk)
    return allocation


def allocation_staff_action(*, allocation: Allocation, by: User, action: str) -> Allocation:
    """An admin's one-click move from the staff home: `activate` a manual allocation that staff
    have set up, or `retry` a failed one. Staff only (roles.is_staff)."""
    if not is_staff(by):
        raise Forbidden("Only admins can activate or retry allocations.")
    if action == "activate":
        return allocation_activate(allocation=allocation, by=by)
    if action == "retry":
        return allocation_reprovision(allocation=allocation, by=by)
    raise ValueError(f"unknown action {action!r}")


@transaction.atomic
def allocation_suspend(*, allocation: Allocation, by: User | None, comment: str = "") -> Allocation:
    """Stop all use for now: backends block submission and cancel running work."""
    return _move(allocation, to=Status.SUSPENDED, by=by, comment=comment)


@transaction.atomic
def allocation_resume(*, allocation: Allocation, by: User | None, comment: str = "") -> Allocation:
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
def allocation_close(
    *, allocation: Allocation, by: User | None = None, comment: str = ""
) -> Allocation:
    return _move(allocation, to=Status.CLOSED, by=by, comment=comment)


def allocation_top_up(
    *, allocation: Allocation, gpu_hours: int, by: User | None, end_date: dt.date | None = None
) -> Allocation:
    """Add GPU-hours and/or move the end date later (a top-up or an extension); an exhausted
    allocation with more hours, or an expired one with a later end date, is active again.
    Runs inside the approving transaction; backends re-cap after commit."""
    old_end = allocation.end_date
    updates: dict = {"gpu_hours": F("gpu_hours") + Decimal(gpu_hours)}
    if gpu_hours:  # a new grant: its usage alerts (thresholds, projection) go out afresh
        updates["alerted_thresholds"] = []
        updates["projection_alerted_at"] = None
    if end_date and end_date > allocation.end_date:
        updates["end_date"] = end_date
    Allocation.objects.filter(pk=allocation.pk).update(**updates)
    allocation.refresh_from_db()
    parts = [f"Top-up of {gpu_hours} GPU-hours"] if gpu_hours else []
    if allocation.end_date != old_end:
        parts.append(f"end date {old_end.isoformat()} -> {allocation.end_date.isoformat()}")
    record_event(
        allocation,
        actor=by,
        from_state=allocation.status,
        to_state=allocation.status,
        comment="; ".join(parts) + ".",
    )
    if allocation.status == Status.EXHAUSTED and gpu_hours:
        _move(allocation, to=Status.ACTIVE, by=by, comment="Active again after a top-up.")
    elif allocation.status == Status.EXPIRED and allocation.end_date >= timezone.localdate():
        _move(allocation, to=Status.ACTIVE, by=by, comment="Active again after an extension.")
    transaction.on_commit(
        lambda: signals.allocation_grant_changed.send(Allocation, allocation_id=allocation.pk)
    )
    return allocation
