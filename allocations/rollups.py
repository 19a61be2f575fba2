"""The usage ledger summed by allocation and month (`UsageMonth`), kept by the ledger's writes.

`ledger_charge` adds each new record to its month in the transaction that inserts it, under the
allocations' row locks it already holds, so a month's row never misses or doubles a record.
Reports by PI, project or facility read these rows (portal/reports/selectors.py): a year is
twelve rows an allocation, whatever the number of records. The reconcile compares them with the
records' own sums and corrects any drift, as it does the allocation's columns.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Iterable
from decimal import Decimal

from django.db.models import Count, F, Q, QuerySet, Sum
from django.db.models.functions import Coalesce, TruncMonth
from django.utils import timezone

from core.versions import settled_bump

from .models import UsageMonth, UsageRecord

NOTEBOOK = "notebook/"  # a notebook session's records: external id notebook/<id>/...
FIELDS = ("records", "gpu_seconds", "cost", "job_gpu_seconds", "notebook_gpu_seconds")
Key = tuple[int, dt.date]
Sums = tuple[int, int, Decimal, int, int]


def month_of(moment: dt.datetime | str) -> dt.date:
    """The first day of `moment`'s month in the portal's time zone (TruncMonth's). A record
    built with its time as text (as the database would take it) is read as the field reads it."""
    when: dt.datetime = (
        UsageRecord._meta.get_field("period_start").to_python(moment)
        if isinstance(moment, str)
        else moment
    )
    return timezone.localtime(when).date().replace(day=1)


def _sums(record: UsageRecord) -> Sums:
    seconds = int(record.gpu_seconds)
    notebook = record.job_id is None and record.external_id.startswith(NOTEBOOK)
    return (
        1,
        seconds,
        Decimal(record.cost),
        seconds if record.job_id is not None else 0,
        seconds if notebook else 0,
    )


def rollup_add(records: Iterable[UsageRecord]) -> None:
    """Add newly inserted records to their months. The caller holds the allocations' row
    locks (ledger_charge), so no other writer creates the same month meanwhile."""
    totals: dict[Key, list] = {}
    for record in records:
        key = (record.allocation_id, month_of(record.period_start))
        old = totals.setdefault(key, [0, 0, Decimal(0), 0, 0])
        for i, value in enumerate(_sums(record)):
            old[i] += value
    current = month_of(timezone.now())
    if any(month < current for _, month in totals):
        settled_bump()  # a late record: the reports' settled months change (core/versions.py)
    for (allocation_id, month), sums in totals.items():
        moved = UsageMonth.objects.filter(allocation_id=allocation_id, month=month).update(
            **{name: F(name) + value for name, value in zip(FIELDS, sums, strict=True)}
        )
        if not moved:
            UsageMonth.objects.create(
                allocation_id=allocation_id, month=month, **dict(zip(FIELDS, sums, strict=True))
            )


def _grouped(allocation_ids: Collection[int] | None) -> QuerySet:
    records = UsageRecord.objects.order_by()
    if allocation_ids is not None:
        records = records.filter(allocation_id__in=allocation_ids)
    notebook = Q(job_id__isnull=True, external_id__startswith=NOTEBOOK)
    return (
        records.annotate(m=TruncMonth("period_start"))
        .values("allocation_id", "m")
        .annotate(
            n=Count("id"),
            s=Sum("gpu_seconds"),
            c=Sum("cost"),
            j=Coalesce(Sum("gpu_seconds", filter=Q(job_id__isnull=False)), 0),
            b=Coalesce(Sum("gpu_seconds", filter=notebook), 0),
        )
    )


def rollup_recomputed(*, allocation_ids: Collection[int] | None = None) -> dict[Key, Sums]:
    """The months as the records say they are. One query."""
    out = {}
    for row in _grouped(allocation_ids):
        month = row["m"].date() if isinstance(row["m"], dt.datetime) else row["m"]
        out[(row["allocation_id"], month)] = (
            int(row["n"]),
            int(row["s"]),
            Decimal(row["c"]),
            int(row["j"]),
            int(row["b"]),
        )
    return out


def rollup_stored(*, allocation_ids: Collection[int] | None = None) -> dict[Key, Sums]:
    rows = UsageMonth.objects.order_by()
    if allocation_ids is not None:
        rows = rows.filter(allocation_id__in=allocation_ids)
    return {
        (row[0], row[1]): (row[2], row[3], Decimal(row[4]), row[5], row[6])
        for row in rows.values_list("allocation_id", "month", *FIELDS)
    }


def rollup_drifted(*, allocation_ids: Collection[int] | None = None) -> set[int]:
    """The allocations whose stored months differ from their records' sums."""
    truth = rollup_recomputed(allocation_ids=allocation_ids)
    stored = rollup_stored(allocation_ids=allocation_ids)
    return {key[0] for key in {*truth, *stored} if truth.get(key) != stored.get(key)}


def rollup_rebuild(*, allocation_ids: Collection[int] | None = None) -> int:
    """Write the allocations' months from their records (the caller holds their locks, or
    nothing else writes: bulk loads). Returns the month rows written."""
    truth = rollup_recomputed(allocation_ids=allocation_ids)
    stale = UsageMonth.objects.all()
    if allocation_ids is not None:
        stale = stale.filter(allocation_id__in=allocation_ids)
    stale.delete()
    UsageMonth.objects.bulk_create(
        [
            UsageMonth(allocation_id=pk, month=month, **dict(zip(FIELDS, sums, strict=True)))
            # In month order, as the ledger's writes leave them: reports read ranges of months.
            for (pk, month), sums in sorted(truth.items(), key=lambda item: item[0][::-1])
        ],
        batch_size=5000,
    )
    settled_bump()
    return len(truth)
