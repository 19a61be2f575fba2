"""What usage alerts say, in the emails, the digest and the pages' notices: one wording.

Two kinds (docs/ledger.md, "Usage alerts"):

- **threshold**: a share of the granted GPU-hours is charged, at the facility's thresholds
  (`Facility.alert_thresholds`, default 50, 80, 95 and 100 percent);
- **projection**: at the 7-day rate the allocation runs out (GPU-hours or budget) more than
  `burn.EARLY_DAYS` days before its end date (allocations/burn.py).

The services (allocations/services/usage.py) send each once per grant; the pages show a notice
while it holds, computed from the ledger's columns and the burn, not from what was sent.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal

from django.db.models import QuerySet

from core.figures import rounded

from .burn import Burn, burn_of, with_burn
from .models import Allocation

# States in which a notice is worth showing: the allocation is, or may again be, in use.
NOTICE_STATES = (Allocation.Status.ACTIVE, Allocation.Status.SUSPENDED, Allocation.Status.EXHAUSTED)


@dataclass(frozen=True)
class Notice:
    """A page's notice about one allocation: `kind` is "threshold" or "projection"."""

    allocation_id: int
    kind: str
    text: str


def used_percent(allocation: Allocation) -> Decimal:
    """Charged GPU-hours as a percent of the grant (the ledger's column; 0 for no grant)."""
    if allocation.gpu_hours <= 0:
        return Decimal(0)
    return allocation.gpu_hours_used * 100 / allocation.gpu_hours


def crossed(percent: Decimal, thresholds: Iterable[int]) -> list[int]:
    """The thresholds `percent` has reached."""
    return [t for t in thresholds if percent >= t]


def threshold_text(allocation: Allocation, threshold: int) -> str:
    """The alert's sentence (the audit event's comment, so the email and digest say it too)."""
    return (
        f"{threshold}% of the granted GPU-hours used ({rounded(allocation.gpu_hours_used)} of "
        f"{rounded(allocation.gpu_hours)})."
    )


def projection_text(burn: Burn) -> str:
    """Runs out early, in words, with the figure and its basis."""
    if burn.runs_out_on is None:
        return ""
    rate = burn.rate_7d
    if burn.runs_out_what == "budget":
        what, per_day = "the budget runs out", f"{rounded(rate.cost_per_day or 0)} a day"
    else:
        what, per_day = (
            "the granted GPU-hours run out",
            f"{rounded(rate.gpu_hours_per_day or 0)} GPU-hours a day",
        )
    days = burn.days_early
    return (
        f"At the 7-day rate ({per_day}, the use charged in the 7 whole days before today) "
        f"{what} on {burn.runs_out_on:%d %b %Y}, {days} day{'s' if days != 1 else ''} before "
        f"the end date ({burn.end_date:%d %b %Y})."
    )


def notices(allocation: Allocation, burn: Burn) -> list[Notice]:
    """The notices a page shows for one allocation: past its facility's highest threshold
    reached, and projected to run out more than EARLY_DAYS days before its end date. Needs its
    facility's `alert_thresholds` loaded."""
    if allocation.status not in NOTICE_STATES:
        return []
    found = []
    reached = crossed(used_percent(allocation), allocation.facility.thresholds)
    if reached:
        percent = used_percent(allocation).quantize(Decimal("0.1"))
        found.append(
            Notice(
                allocation.pk,
                "threshold",
                f"{percent}% of the {rounded(allocation.gpu_hours)} granted GPU-hours are used "
                f"({rounded(allocation.gpu_hours_used)} charged): past the {max(reached)}% "
                "alert.",
            )
        )
    if allocation.status == Allocation.Status.ACTIVE and burn.runs_out_early:
        found.append(Notice(allocation.pk, "projection", projection_text(burn)))
    return found


def notices_of(allocations: Sequence[Allocation], burns: dict[int, Burn]) -> list[Notice]:
    """Every notice of these allocations, in their order."""
    return [n for a in allocations if a.pk in burns for n in notices(a, burns[a.pk])]


@dataclass(frozen=True)
class Row:
    """An allocation as a list shows it: with its burn and its notices."""

    allocation: Allocation
    burn: Burn
    notices: list[Notice]


def rows_with_burn(allocations: QuerySet[Allocation]) -> list[Row]:
    """The allocations (their grant, ledger columns, budget, dates, status and facility's
    alert thresholds loaded), each with its burn and notices: one query, the window sums read
    as subqueries of the rows (burn.with_burn)."""
    found = []
    for allocation in with_burn(allocations):
        burn = burn_of(allocation)
        found.append(Row(allocation, burn, notices(allocation, burn)))
    return found
