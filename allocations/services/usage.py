"""The usage ledger: recording what backends report, alerting, exhausting."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING

from django.db import transaction
from django.utils import timezone

from core.errors import Forbidden

from ..alerts import crossed, projection_text, threshold_text, used_percent
from ..burn import Burn, allocation_burn, burn_of, with_burn
from ..ledger import ledger_charge
from ..models import Allocation, Facility, UsageAlert, UsageRecord
from ..notifications import ALERT_EMAILS, notify_after_commit
from ..roles import is_staff
from ..transitions import record_event
from .allocations import allocation_exhaust
from .errors import PolicyError

if TYPE_CHECKING:
    from ..roles import User


def usage_record_many(records: Iterable[UsageRecord], *, batch_size: int = 2000) -> int:
    """Insert usage rows, ignoring any already recorded (unique by source and external id), so
    ingesting the same backend records twice charges them once; the allocation's ledger columns
    move with them (allocations/ledger.py). Returns rows offered."""
    rows = list(records)
    if rows:
        ledger_charge(records=rows, batch_size=batch_size)
    return len(rows)


@transaction.atomic
def usage_check_thresholds(*, allocation_id: int) -> list[int]:
    """Alert the project's PI and members once at each of the facility's thresholds
    (`Facility.alert_thresholds`: percent of the granted GPU-hours charged), and once when the
    7-day rate says the allocation runs out more than 7 days before its end date
    (allocations/burn.py); at 100% an active allocation becomes exhausted. Each alert is an
    audit event, a `UsageAlert` record and an email after the commit (or a line in the weekly
    digest of those who chose it). Safe to call after every ingestion and from the beat: what
    was sent is kept on the allocation (a top-up clears it). Returns the thresholds newly
    crossed."""
    allocation = Allocation.objects.select_for_update().get(pk=allocation_id)
    if allocation.gpu_hours <= 0:
        return []
    # Read apart from the locked row: the lock stays on the allocation alone.
    allocation.facility = Facility.objects.only("alert_thresholds").get(pk=allocation.facility_id)
    percent = used_percent(allocation)  # the ledger's column, read under the row lock
    new = [
        t
        for t in crossed(percent, allocation.facility.thresholds)
        if t not in allocation.alerted_thresholds
    ]
    if new:
        allocation.alerted_thresholds = sorted({*allocation.alerted_thresholds, *new})
        Allocation.objects.filter(pk=allocation.pk).update(
            alerted_thresholds=allocation.alerted_thresholds
        )
        _alert(allocation, kind=UsageAlert.Kind.THRESHOLD, thresholds=new)
    if percent >= 100:
        if allocation.status == Allocation.Status.ACTIVE:
            allocation_exhaust(allocation=allocation)
    else:
        _check_projection(allocation)
    return new


def _check_projection(allocation: Allocation) -> None:
    """The projection alert, once per grant, for an active allocation that runs out early."""
    if allocation.status != Allocation.Status.ACTIVE or allocation.projection_alerted_at:
        return
    burn = allocation_burn(allocation)
    if not burn.runs_out_early:
        return
    Allocation.objects.filter(pk=allocation.pk).update(projection_alerted_at=timezone.now())
    _alert(allocation, kind=UsageAlert.Kind.PROJECTION, burn=burn)


def _alert(
    allocation: Allocation, *, kind: str, thresholds: Sequence[int] = (), burn: Burn | None = None
) -> UsageAlert:
    """Audit, record and (after the commit) email one alert."""
    comment = (
        projection_text(burn) if burn is not None else threshold_text(allocation, max(thresholds))
    )
    event = record_event(
        allocation,
        actor=None,
        from_state=allocation.status,
        to_state=allocation.status,
        comment=comment,
    )
    alert = UsageAlert.objects.create(
        allocation=allocation,
        kind=kind,
        thresholds=list(thresholds),
        runs_out_on=burn.runs_out_on if burn else None,
        event=event,
    )
    notify_after_commit(ALERT_EMAILS[kind], event.pk)
    return alert


def usage_check_all() -> int:
    """The beat's pass (hourly): the 7-day rate moves at midnight, not only when a charge
    comes, so active allocations not yet alerted are checked here too. One query reads them
    with their burn; only those projected to run out early are checked (and locked). Returns
    the number checked."""
    rows = with_burn(
        Allocation.objects.filter(
            status=Allocation.Status.ACTIVE, projection_alerted_at__isnull=True, gpu_hours__gt=0
        ).order_by()
    )
    checked = 0
    for allocation in rows:
        if burn_of(allocation).runs_out_early:
            usage_check_thresholds(allocation_id=allocation.pk)
            checked += 1
    return checked


@transaction.atomic
def usage_correct(
    *, allocation: Allocation, by: User, gpu_seconds: int, cost: Decimal = Decimal(0), reason: str
) -> UsageRecord:
    """Correct an allocation's ledger (staff only): a new `correction` record of `gpu_seconds`
    and `cost` (negative to take back a wrong charge), with the reason, audited on the
    allocation. Usage records are never edited or deleted."""
    if not is_staff(by):
        raise Forbidden("Only staff can correct usage.")
    reason = (reason or "").strip()
    if not reason:
        raise PolicyError("Say why the ledger is corrected.", field="reason")
    locked = Allocation.objects.select_for_update().get(pk=allocation.pk)
    now = timezone.now()
    # Through the ledger, as every charge: the columns and the monthly rollups move with it.
    external_id = f"correction-{uuid.uuid4().hex}"
    ledger_charge(
        records=[
            UsageRecord(
                allocation=locked,
                source=UsageRecord.CORRECTION,
                external_id=external_id,
                period_start=now,
                period_end=now,
                gpu_seconds=gpu_seconds,
                cost=cost,
                detail={"reason": reason, "by": by.get_username()},
            )
        ]
    )
    record = UsageRecord.objects.get(source=UsageRecord.CORRECTION, external_id=external_id)
    record_event(
        locked,
        actor=by,
        from_state=locked.status,
        to_state=locked.status,
        comment=f"Usage corrected by {gpu_seconds} GPU-seconds and {cost}: {reason}",
    )
    usage_check_thresholds(allocation_id=locked.pk)
    return record
