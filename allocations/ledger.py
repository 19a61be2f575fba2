"""The ledger of an allocation: granted, charged, reserved and remaining, all in SQL.

    remaining GPU-seconds = granted - charged - outstanding reservations
    remaining budget      = budget  - spent   - outstanding cost reservations

Charges are `UsageRecord`s (what the backends say ran). Reservations are promises to work that
has not finished: the launcher registers a provider (from its app's `ready()`, so imports keep
running `launcher -> allocations`) that gives, for an allocation row (`OuterRef("pk")`), the sum
over its unfinished jobs of `max(estimate - charged to that job so far, 0)`; a finished job
reserves nothing, its charges are the truth. Without a provider nothing is reserved.

Every figure here is exact: integer seconds and decimal money. Rounding is for display only
(`allocations/templatetags/ledger.py`).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

from django.db.models import DecimalField, Expression, Value

# A provider returns {"gpu_seconds": expr, "cost": expr}, each evaluated per Allocation row.
ReservationProvider = Callable[[], dict[str, Expression]]
_providers: list[ReservationProvider] = []

SECONDS = DecimalField(max_digits=20, decimal_places=3)
MONEY = DecimalField(max_digits=16, decimal_places=4)


def register_reservations(provider: ReservationProvider) -> None:
    """Add a source of outstanding reservations (idempotent per provider)."""
    if provider not in _providers:
        _providers.append(provider)


def reserved_expressions() -> dict[str, Expression]:
    """SQL expressions for the reserved GPU-seconds and cost of the allocation row in scope."""
    if not _providers:
        return {"gpu_seconds": Value(Decimal(0), output_field=SECONDS),
                "cost": Value(Decimal(0), output_field=MONEY)}
    parts = [p() for p in _providers]
    seconds, cost = parts[0]["gpu_seconds"], parts[0]["cost"]
    for part in parts[1:]:
        seconds, cost = seconds + part["gpu_seconds"], cost + part["cost"]
    return {"gpu_seconds": seconds, "cost": cost}


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
    """The ledger of an allocation annotated by `selectors.with_usage` (no query)."""
    return Ledger(gpu_seconds_granted=Decimal(allocation.gpu_hours) * 3600,
                  gpu_seconds_used=int(allocation.gpu_seconds_used),
                  gpu_seconds_reserved=Decimal(allocation.gpu_seconds_reserved or 0),
                  budget=allocation.budget, spend=Decimal(allocation.spend),
                  cost_reserved=Decimal(allocation.cost_reserved or 0))
