"""The usage ledger: recording what backends report, alerting, exhausting."""
from __future__ import annotations

import uuid
from collections.abc import Iterable
from decimal import Decimal

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone

from ..models import Allocation, UsageRecord
from ..transitions import notify_after_commit, record_event
from ..roles import is_staff
from .allocations import allocation_exhaust
from .errors import PolicyError
from ..ledger import ledger_charge

THRESHOLDS = (50, 80, 100)


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
    """Alert once at 50%, 80% and 100% of the grant; at 100% an active allocation becomes
    exhausted. Safe to call after every ingestion. Returns the thresholds newly crossed."""
    allocation = Allocation.objects.select_for_update().get(pk=allocation_id)
    used = allocation.gpu_hours_used  # the ledger's column, read under the row lock
    if allocation.gpu_hours <= 0:
        return []
    percent = used * 100 / allocation.gpu_hours
    crossed = [t for t in THRESHOLDS if percent >= t and t not in allocation.alerted_thresholds]
    if crossed:
        allocation.alerted_thresholds = sorted({*allocation.alerted_thresholds, *crossed})
        Allocation.objects.filter(pk=allocation.pk).update(
            alerted_thresholds=allocation.alerted_thresholds
        )
        event = record_event(allocation, actor=None, from_state=allocation.status,
                             to_state=allocation.status,
                             comment=f"{max(crossed)}% of the granted GPU-hours used "
                                     f"({used:.1f} of {allocation.gpu_hours}).")
        notify_after_commit("usage_threshold", event.pk)
    if percent >= 100 and allocation.status == Allocation.Status.ACTIVE:
        allocation_exhaust(allocation=allocation)
    return crossed


@transaction.atomic
def usage_correct(*, allocation: Allocation, by, gpu_seconds: int, cost: Decimal = Decimal(0),
                  reason: str) -> UsageRecord:
    """Correct an allocation's ledger (staff only): a new `correction` record of `gpu_seconds`
    and `cost` (negative to take back a wrong charge), with the reason, audited on the
    allocation. Usage records are never edited or deleted."""
    if not is_staff(by):
        raise PermissionDenied("Only staff can correct usage.")
    reason = (reason or "").strip()
    if not reason:
        raise PolicyError("Say why the ledger is corrected.", field="reason")
    locked = Allocation.objects.select_for_update().get(pk=allocation.pk)
    now = timezone.now()
    record = UsageRecord.objects.create(
        allocation=locked, source=UsageRecord.Source.CORRECTION,
        external_id=f"correction-{uuid.uuid4().hex}", period_start=now, period_end=now,
        gpu_seconds=gpu_seconds, cost=cost, detail={"reason": reason, "by": by.get_username()})
    record_event(locked, actor=by, from_state=locked.status, to_state=locked.status,
                 comment=f"Usage corrected by {gpu_seconds} GPU-seconds and {cost}: {reason}")
    usage_check_thresholds(allocation_id=locked.pk)
    return record
