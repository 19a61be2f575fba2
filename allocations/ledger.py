"""The ledger of an allocation: granted, charged, reserved and remaining, kept as data.

    remaining GPU-seconds = granted - charged - outstanding reservations
    remaining budget      = budget  - spent   - outstanding cost reservations

Charged GPU-seconds, spend and the reservations (GPU-seconds and money) are columns of the
allocation (`Allocation.LEDGER_FIELDS`), moved by `F()` updates under the allocation's row lock
by the services that charge, reserve and release (allocations/services/ledger.py); a beat task
recomputes them from the records and corrects any drift. Reading the ledger is reading a row.

Charges are `UsageRecord`s (what the backends say ran). Reservations are promises to work that
has not finished: the launcher registers a provider (from its app's `ready()`, so imports keep
running `launcher -> allocations`) that sums, per allocation, over unfinished jobs, `max(estimate
- charged to that job so far, 0)`; a finished job reserves nothing, its charges are the truth.
Notebook sessions (launcher.notebooks) register a second provider: a session reserves its
`gpus x hours` until its backend's record is charged (or it failed with nothing to charge).

Every figure here is exact: integer seconds and decimal money. Rounding is for display only.
"""
from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from decimal import Decimal

from django.db.models import DecimalField

SECONDS = DecimalField(max_digits=20, decimal_places=3)
MONEY = DecimalField(max_digits=16, decimal_places=4)

# provider(allocation_ids=..., <selects>=...) -> {allocation id: (GPU-seconds, money)} reserved
# by the selected unfinished work of its kind (None selects all of it): jobs (`job_ids`), notebook
# sessions (`session_ids`).
ReservationProvider = Callable[..., dict[int, tuple[Decimal, Decimal]]]
SELECTORS = ("job_ids", "session_ids")
_providers: list[tuple[str, ReservationProvider]] = []


def register_reservations(provider: ReservationProvider, *, selects: str = "job_ids") -> None:
    """Add a source of outstanding reservations (idempotent per provider). `selects` names the
    keyword that picks its rows by id: `job_ids` (jobs) or `session_ids` (notebook sessions)."""
    if selects not in SELECTORS:
        raise ValueError(f"selects must be one of {SELECTORS}")
    if (selects, provider) not in _providers:
        _providers.append((selects, provider))


def reservations(*, allocation_ids: Collection[int] | None = None,
                 job_ids: Collection[int] | None = None,
                 session_ids: Collection[int] | None = None) -> dict[int, tuple[Decimal, Decimal]]:
    """{allocation id: (reserved GPU-seconds, reserved money)} of the selected unfinished work,
    from the records (the recomputation's and the write paths' one definition). With no ids,
    all the work (of `allocation_ids`); with ids of one kind, only those rows of that kind."""
    chosen = {"job_ids": job_ids, "session_ids": session_ids}
    picking = any(ids is not None for ids in chosen.values())
    totals: dict[int, tuple[Decimal, Decimal]] = {}
    for selects, provider in _providers:
        ids = chosen[selects]
        if picking and ids is None:
            continue
        for pk, (seconds, cost) in provider(allocation_ids=allocation_ids, **{selects: ids}).items():
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
        return max(self.gpu_seconds_granted - self.gpu_seconds_used - self.gpu_seconds_reserved,
                   Decimal(0))

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
    return Ledger(gpu_seconds_granted=Decimal(allocation.gpu_hours) * 3600,
                  gpu_seconds_used=int(allocation.gpu_seconds_used),
                  gpu_seconds_reserved=Decimal(allocation.gpu_seconds_reserved),
                  budget=allocation.budget, spend=Decimal(allocation.spend),
                  cost_reserved=Decimal(allocation.cost_reserved))
