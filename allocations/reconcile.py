"""The ledger's reconcile: the stored columns and monthly rollups checked against the records.

Every write path keeps the allocation's ledger columns (allocations/ledger.py) and its monthly
rollups (allocations/rollups.py) in step with the records; this pass, the hourly
`allocations.reconcile_ledger` beat task, proves it and corrects any drift, logged as a warning
and audited on the allocation.

Its cost does not grow with the ledger: the hourly pass checks only the allocations a drift can
have reached since the last pass (given records since, with unfinished work, or reserving), a
few hundred at a centre, by index; every allocation is checked once a day (one scan of the
records). docs/performance.md has the figures at 5,000,000 records.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Collection
from dataclasses import asdict, dataclass

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from .ledger import Figures, ledger_recomputed, ledger_stored, reservations
from .models import Allocation, LedgerPass, UsageRecord
from .rollups import rollup_drifted, rollup_rebuild
from .transitions import record_event

log = logging.getLogger("allocations.ledger")


@dataclass(frozen=True)
class Drift:
    allocation_id: int
    stored: Figures
    recomputed: Figures


FULL_PASS_EVERY = dt.timedelta(hours=24)


def _changed_since(last: LedgerPass) -> set[int]:
    """The allocations a drift can have reached since `last`: those given records since, those
    with unfinished work (jobs, sessions) and those whose stored reservations are not zero."""
    new = UsageRecord.objects.filter(pk__gt=last.last_record_id).order_by()
    reserving = Allocation.objects.filter(
        ~Q(gpu_seconds_reserved=0) | ~Q(cost_reserved=0)
    ).order_by()
    return {
        *new.values_list("allocation_id", flat=True).distinct(),
        *reservations(allocation_ids=None),
        *reserving.values_list("pk", flat=True),
    }


def ledger_reconcile(
    *, allocation_ids: Collection[int] | None = None, full: bool = False
) -> list[Drift]:
    """Recompute the columns and the monthly rollups from the records; where they differ, check
    again under the row lock and correct them, with a warning in the log and an audit event on
    the allocation. Returns the drifts corrected (none when every write path kept them).

    The beat's pass (no `allocation_ids`) is incremental: it checks the allocations changed
    since the last pass (`_changed_since`), and every allocation once a day (FULL_PASS_EVERY)
    or when asked (`full`); each pass is kept as a `LedgerPass`."""
    started, scope = time.monotonic(), allocation_ids
    top = UsageRecord.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
    if allocation_ids is None and not full:
        last = LedgerPass.objects.order_by("-pk").first()
        full = last is None or last.ran_at < timezone.now() - FULL_PASS_EVERY
        if last is not None and not full:
            scope = _changed_since(last)
    recomputed = ledger_recomputed(allocation_ids=scope)
    stored = ledger_stored(allocation_ids=scope)
    suspects = {pk for pk in stored if stored[pk] != recomputed.get(pk, Figures())}
    suspects |= rollup_drifted(allocation_ids=scope)
    drifts = [d for pk in sorted(suspects) if (d := _correct(pk)) is not None]
    if allocation_ids is None:
        LedgerPass.objects.create(
            last_record_id=top,
            full=full,
            allocations_checked=len(stored),
            drifts=len(drifts),
            seconds=time.monotonic() - started,
        )
    return drifts


@transaction.atomic
def _correct(pk: int) -> Drift | None:
    """Under the row lock: set the columns and the months from the records if they differ."""
    allocation = Allocation.objects.select_for_update().get(pk=pk)
    now = ledger_stored(allocation_ids=[pk])[pk]
    truth = ledger_recomputed(allocation_ids=[pk]).get(pk, Figures())
    months = bool(rollup_drifted(allocation_ids=[pk]))
    if now == truth and not months:
        return None  # a write landed between the two reads; nothing drifted
    changes = [
        f"{name} {getattr(now, name)} -> {getattr(truth, name)}"
        for name in Allocation.LEDGER_FIELDS
        if getattr(now, name) != getattr(truth, name)
    ]
    if now != truth:
        Allocation.objects.filter(pk=pk).update(**asdict(truth))
    if months:
        rollup_rebuild(allocation_ids=[pk])
        changes.append("monthly rollups rebuilt")
    comment = "Ledger corrected from the records: " + "; ".join(changes)
    log.warning("allocation %s: %s", pk, comment)
    record_event(
        allocation,
        actor=None,
        from_state=allocation.status,
        to_state=allocation.status,
        comment=comment,
    )
    return Drift(allocation_id=pk, stored=now, recomputed=truth)
