"""The ledger of an allocation: granted, charged, reserved and remaining, kept as data.

    remaining GPU-seconds = granted - charged - outstanding reservations
    remaining budget      = budget  - spent   - outstanding cost reservations

Charged GPU-seconds, spend and the reservations (GPU-seconds and money) are columns of the
allocation (`Allocation.LEDGER_FIELDS`), moved by `F()` updates under the allocation's row lock
by the services that charge, reserve and release (below); a beat task
recomputes them from the records and corrects any drift. Reading the ledger is reading a row.

Charges are `UsageRecord`s (what the backends say ran). Reservations are promises to work that
has not finished: the launcher registers a provider (from its app's `ready()`, so imports keep
running `launcher -> allocations`) that sums, per allocation, over unfinished jobs, `max(estimate
- charged to that job so far, 0)`; a finished job reserves nothing, its charges are the truth.
Notebook sessions (launcher.notebooks) register a second provider: a session reserves its
`gpus x hours` until its backend's record is charged (or it failed with nothing to charge).

Every figure here is exact: integer seconds and decimal money. Rounding is for display only.

Writing it: the columns of `Allocation.LEDGER_FIELDS`, moved in SQL.

Every change is an `F()` update made under the allocation's row lock (`SELECT ... FOR
UPDATE`, the lock a launch takes) by the service that causes it:

- a charge (`ledger_charge`, through `usage_record_many`): the new usage records' seconds and
  money are added, and the reservations of the jobs they are attributed to shrink;
- a reservation (`ledger_reserve`): new jobs' estimates (a notebook session's gpus x hours) are
  added;
- a release (`ledger_jobs_change` around a job's state move, its copied charge or its re-based
  estimate): the reservation moves by what the job reserves after less what it reserved before.

`ledger_reconcile` (allocations/reconcile.py, the `allocations.reconcile_ledger` beat task)
recomputes the columns and the monthly rollups from the records and corrects, logs and audits
any drift.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.db.models import DecimalField, F, Sum
from django.utils.module_loading import import_string

from core.versions import projects_bump

from .models import Allocation, UsageRecord
from .rollups import rollup_add, rollup_rebuild

log = logging.getLogger(__name__)
ZERO = Decimal(0)
SECONDS = DecimalField(max_digits=20, decimal_places=3)
MONEY = DecimalField(max_digits=16, decimal_places=4)

# provider(allocation_ids=..., <selects>=...) -> {allocation id: (GPU-seconds, money)} reserved
# by the selected unfinished work of its kind (None selects all of it): jobs (`job_ids`), notebook
# sessions (`session_ids`). The apps that own the work name their providers in the settings
# (`PORTAL_RESERVATION_PROVIDERS`): this floor never imports them.
ReservationProvider = Callable[..., dict[int, tuple[Decimal, Decimal]]]


@functools.cache
def _providers() -> tuple[tuple[str, ReservationProvider], ...]:
    return tuple(
        (selects, import_string(path))
        for selects, path in settings.PORTAL_RESERVATION_PROVIDERS.items()
    )


def reservations(
    *,
    allocation_ids: Collection[int] | None = None,
    job_ids: Collection[int] | None = None,
    session_ids: Collection[int] | None = None,
) -> dict[int, tuple[Decimal, Decimal]]:
    """{allocation id: (reserved GPU-seconds, reserved money)} of the selected unfinished work,
    from the records (the recomputation's and the write paths' one definition). With no ids,
    all the work (of `allocation_ids`); with ids of one kind, only those rows of that kind."""
    chosen = {"job_ids": job_ids, "session_ids": session_ids}
    picking = any(ids is not None for ids in chosen.values())
    totals: dict[int, tuple[Decimal, Decimal]] = {}
    for selects, provider in _providers():
        ids = chosen[selects]
        if picking and ids is None:
            continue
        for pk, (seconds, cost) in provider(
            allocation_ids=allocation_ids, **{selects: ids}
        ).items():
            old = totals.get(pk, (Decimal(0), Decimal(0)))
            totals[pk] = (old[0] + seconds, old[1] + cost)
    return totals


@dataclass(frozen=True)
class Ledger:
    """One allocation's figures, exact. Hours are derived from integer seconds."""

    gpu_seconds_granted: Decimal
    gpu_seconds_used: int
    gpu_seconds_reserved: Decimal
    budget: Decimal | None
    spend: Decimal
    cost_reserved: Decimal

    @property
    def gpu_seconds_remaining(self) -> Decimal:
        return max(
            self.gpu_seconds_granted - self.gpu_seconds_used - self.gpu_seconds_reserved, Decimal(0)
        )

    @property
    def gpu_hours_used(self) -> Decimal:
        return Decimal(self.gpu_seconds_used) / 3600

    @property
    def gpu_hours_reserved(self) -> Decimal:
        return Decimal(self.gpu_seconds_reserved) / 3600

    @property
    def gpu_hours_remaining(self) -> Decimal:
        return self.gpu_seconds_remaining / 3600

    @property
    def budget_remaining(self) -> Decimal | None:
        if self.budget is None:
            return None
        return max(self.budget - self.spend - self.cost_reserved, Decimal(0))


def ledger_of(allocation) -> Ledger:
    """The ledger of an allocation row, from its columns (no query)."""
    return Ledger(
        gpu_seconds_granted=Decimal(allocation.gpu_hours) * 3600,
        gpu_seconds_used=int(allocation.gpu_seconds_used),
        gpu_seconds_reserved=Decimal(allocation.gpu_seconds_reserved),
        budget=allocation.budget,
        spend=Decimal(allocation.spend),
        cost_reserved=Decimal(allocation.cost_reserved),
    )


@dataclass(frozen=True)
class Figures:
    """The four ledger columns of one allocation."""

    gpu_seconds_used: int = 0
    spend: Decimal = ZERO
    gpu_seconds_reserved: Decimal = ZERO
    cost_reserved: Decimal = ZERO


def _lock(allocation_ids: Iterable[int]) -> None:
    """The allocations' row locks, in id order (two writers never wait on each other in turn)."""
    ids = sorted({pk for pk in allocation_ids if pk is not None})
    if ids:
        list(
            Allocation.objects.select_for_update()
            .filter(pk__in=ids)
            .order_by("pk")
            .values_list("pk", flat=True)
        )


def _bump(allocation_ids: Collection[int]) -> None:
    """The pages' cached fragments of these allocations' projects go stale (versions.py)."""
    if allocation_ids:
        projects_bump(
            Allocation.objects.filter(pk__in=allocation_ids).values_list("project_id", flat=True)
        )


def _add(deltas: dict[int, Figures], *, touched: Collection[int] = ()) -> None:
    """Add the deltas to the columns; bump the projects of the allocations moved and of those
    `touched` (given new usage records, drawn on the usage charts even when they move no
    figure: a record of zero seconds and zero cost is still a day of use)."""
    moved = [pk for pk, d in deltas.items() if d != Figures()]
    _bump({*moved, *touched})
    for pk, d in deltas.items():
        if d != Figures():
            Allocation.objects.filter(pk=pk).update(
                gpu_seconds_used=F("gpu_seconds_used") + d.gpu_seconds_used,
                spend=F("spend") + d.spend,
                gpu_seconds_reserved=F("gpu_seconds_reserved") + d.gpu_seconds_reserved,
                cost_reserved=F("cost_reserved") + d.cost_reserved,
            )


def _reserved_delta(before: dict, after: dict) -> dict[int, Figures]:
    zero = (ZERO, ZERO)
    return {
        pk: Figures(
            gpu_seconds_reserved=after.get(pk, zero)[0] - before.get(pk, zero)[0],
            cost_reserved=after.get(pk, zero)[1] - before.get(pk, zero)[1],
        )
        for pk in {*before, *after}
    }


def _measure(job_ids: Collection[int], session_ids: Collection[int]) -> dict:
    """What the chosen jobs and notebook sessions reserve now, per allocation."""
    if not job_ids and not session_ids:
        return {}
    return reservations(
        job_ids=list(job_ids) if job_ids else None,
        session_ids=list(session_ids) if session_ids else None,
    )


@contextmanager
def ledger_jobs_change(
    *,
    allocation_ids: Collection[int],
    job_ids: Collection[int] = (),
    session_ids: Collection[int] = (),
) -> Iterator[None]:
    """Around a change to existing jobs (or notebook sessions) that may move what they reserve
    (a state move, a copied charge, a re-based estimate, a session's charge): lock their
    allocations, and add what they reserve after less what they reserved before. Nothing is
    applied if the body raises."""
    with transaction.atomic():
        _lock(allocation_ids)
        before = _measure(job_ids, session_ids)
        yield
        after = _measure(job_ids, session_ids)
        _add(_reserved_delta(before, after))


@transaction.atomic
def ledger_reserve(
    *, allocation_id: int, job_ids: Collection[int] = (), session_ids: Collection[int] = ()
) -> None:
    """New jobs or notebook sessions (just created in the caller's transaction) reserve their
    estimates (a session: gpus x hours)."""
    _lock([allocation_id])
    _add(_reserved_delta({}, _measure(job_ids, session_ids)))


@transaction.atomic
def ledger_charge(*, records: list[UsageRecord], batch_size: int = 2000) -> int:
    """Insert the usage records not yet recorded (unique by source and external id) and add
    them to their allocations' charged seconds and spend; the jobs they are attributed to
    reserve less in the same step. Returns the number of records new to the ledger."""
    _lock(r.allocation_id for r in records)
    seen = set(
        UsageRecord.objects.filter(external_id__in={r.external_id for r in records}).values_list(
            "source", "external_id"
        )
    )
    new = []
    for record in records:
        if (record.source, record.external_id) not in seen:
            seen.add((record.source, record.external_id))
            new.append(record)
    job_ids = {r.job_id for r in new if r.job_id is not None}
    before = reservations(job_ids=job_ids) if job_ids else {}
    UsageRecord.objects.bulk_create(new, batch_size=batch_size, ignore_conflicts=True)
    rollup_add(new)
    after = reservations(job_ids=job_ids) if job_ids else {}
    deltas = _reserved_delta(before, after)
    for record in new:
        old = deltas.get(record.allocation_id, Figures())
        deltas[record.allocation_id] = Figures(
            gpu_seconds_used=old.gpu_seconds_used + int(record.gpu_seconds),
            spend=old.spend + Decimal(record.cost),
            gpu_seconds_reserved=old.gpu_seconds_reserved,
            cost_reserved=old.cost_reserved,
        )
    _add(deltas, touched={r.allocation_id for r in new})
    return len(new)


def ledger_recomputed(*, allocation_ids: Collection[int] | None = None) -> dict[int, Figures]:
    """The ledger as the records say it is: the usage records' sums and the unfinished jobs'
    reservations, per allocation (absent: all zero)."""
    usage = UsageRecord.objects.order_by()
    if allocation_ids is not None:
        usage = usage.filter(allocation_id__in=allocation_ids)
    charged = {
        row[0]: row[1:]
        for row in usage.values("allocation_id")
        .annotate(s=Sum("gpu_seconds"), c=Sum("cost"))
        .values_list("allocation_id", "s", "c")
    }
    reserved = reservations(allocation_ids=allocation_ids)
    return {
        pk: Figures(
            gpu_seconds_used=int(charged.get(pk, (0, ZERO))[0]),
            spend=Decimal(charged.get(pk, (0, ZERO))[1]),
            gpu_seconds_reserved=reserved.get(pk, (ZERO, ZERO))[0],
            cost_reserved=reserved.get(pk, (ZERO, ZERO))[1],
        )
        for pk in {*charged, *reserved}
    }


def ledger_stored(*, allocation_ids: Collection[int] | None = None) -> dict[int, Figures]:
    """The ledger columns as stored, per allocation."""
    rows = Allocation.objects.order_by()
    if allocation_ids is not None:
        rows = rows.filter(pk__in=allocation_ids)
    return {row[0]: Figures(*row[1:]) for row in rows.values_list("pk", *Allocation.LEDGER_FIELDS)}


def ledger_rebuild(*, allocation_ids: Collection[int] | None = None) -> int:
    """Set the columns from the records, silently: for rows loaded in bulk around the services
    (benchmark and demo seeding, an import). Returns the allocations written."""
    recomputed = ledger_recomputed(allocation_ids=allocation_ids)
    rows = (
        Allocation.objects.all()
        if allocation_ids is None
        else Allocation.objects.filter(pk__in=allocation_ids)
    )
    written, ids = 0, list(rows.values_list("pk", flat=True))
    for pk in ids:
        written += Allocation.objects.filter(pk=pk).update(**asdict(recomputed.get(pk, Figures())))
    rollup_rebuild(allocation_ids=allocation_ids)
    _bump(ids)
    return written
