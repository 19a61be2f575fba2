"""Burn rate and run-out projection: the one home of their definitions (docs/ledger.md, "Burn
rate and run-out").

- **Window**: the N whole days before today (the server's time zone; today, still under way,
  is not counted), N = 7 and N = 30.
- **Use in a window**: the allocation's usage records (charges and corrections) whose
  `period_end` falls in it, GPU-seconds and money summed in SQL.
- **Rate**: that use divided by the window's days, or by the whole days the allocation has
  existed before today (from its start date) when those are fewer: a 3-day-old allocation's
  rate is its use over 3 days, not 7. None before its first whole day. Money per day only where
  the allocation has a budget.
- **Remaining**, for the projection: granted - charged (budget - spent). Reservations of
  unfinished work are not counted: they are promises that may end early (the launch check
  counts them; the projection is about the rate of charging).
- **Runs out on**: today + ceil(remaining / the 7-day rate) days, for GPU-hours and for money.
  None when the 7-day rate is 0 ("no use in the last 7 days"), when nothing is left, or with
  fewer than MIN_PROJECTION_DAYS whole days behind it ("not enough data yet for a projection").
- **Before the end date**: the earlier run-out date falls before the allocation's end date;
  the projection alert goes out when it falls more than EARLY_DAYS days before it.

The pure function `burn_from` computes all of it from the sums; a query of allocation rows reads
the sums as correlated subqueries (`with_burn`: the alerts' pass), and loaded allocations (a page
of the API list, one allocation's page) read them in one grouped query over the records of the
widest window (`burns_of`, `allocation_burn`).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db.models import (
    BigIntegerField,
    DecimalField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Sum,
    Value,
)
from django.db.models.functions import Coalesce
from django.utils import timezone

from core.figures import rounded

from .models import Allocation, UsageRecord

WINDOWS = (7, 30)
#: The window whose rate projects the run-out date (and draws the chart's projection).
PROJECTION_WINDOW = 7
#: Fewer whole days of history than this is no basis for a projection.
MIN_PROJECTION_DAYS = 2
#: The projection alert: the allocation runs out more than this many days before its end date.
EARLY_DAYS = 7
ZERO = Decimal(0)
_MONEY = DecimalField(max_digits=16, decimal_places=4)
NOT_ENOUGH_DATA = "not enough data yet for a projection"


@dataclass(frozen=True)
class Rate:
    """Use per day over one window. `days` is what the use was divided by."""

    window: int
    days: int
    gpu_hours_per_day: Decimal | None
    cost_per_day: Decimal | None


@dataclass(frozen=True)
class Burn:
    today: dt.date
    end_date: dt.date
    rate_7d: Rate
    rate_30d: Rate
    runs_out_gpu_hours: dt.date | None
    runs_out_budget: dt.date | None
    rate_basis: str
    runs_out_basis: str

    @property
    def runs_out_on(self) -> dt.date | None:
        """The earlier of the two run-out dates (what stops work first)."""
        dates = [d for d in (self.runs_out_gpu_hours, self.runs_out_budget) if d is not None]
        return min(dates) if dates else None

    @property
    def runs_out_what(self) -> str:
        """What runs out first: "GPU-hours" or "budget" ("" without a projection)."""
        if self.runs_out_on is None:
            return ""
        return "GPU-hours" if self.runs_out_on == self.runs_out_gpu_hours else "budget"

    @property
    def before_end_date(self) -> bool:
        return self.runs_out_on is not None and self.runs_out_on < self.end_date

    @property
    def days_early(self) -> int:
        """Days between the run-out date and the end date (0 unless before it)."""
        return (self.end_date - self.runs_out_on).days if self.runs_out_on else 0

    @property
    def runs_out_early(self) -> bool:
        """What the projection alert is about: more than EARLY_DAYS days before the end."""
        return self.before_end_date and self.days_early > EARLY_DAYS


def window_bounds(today: dt.date, days: int) -> tuple[dt.datetime, dt.datetime]:
    """[start, end) of the `days` whole days before `today`, in the current time zone."""
    tz = timezone.get_current_timezone()
    midnight = dt.datetime.combine(today, dt.time(), tzinfo=tz)
    return midnight - dt.timedelta(days=days), midnight


def observed_days(start_date: dt.date, today: dt.date, window: int) -> int:
    """The days a window's use is divided by: the window's, or the whole days the allocation
    has existed before today when fewer (0 before its first whole day)."""
    return max(0, min(window, (today - start_date).days))


def per_day(total: Decimal, days: int) -> Decimal | None:
    return total / days if days else None


def run_out(today: dt.date, remaining: Decimal, rate: Decimal | None) -> dt.date | None:
    """today + ceil(remaining / rate) days; None at no rate or with nothing left."""
    if rate is None or rate <= 0 or remaining <= 0:
        return None
    return today + dt.timedelta(days=math.ceil(remaining / rate))


def burn_from(
    *,
    today: dt.date,
    start_date: dt.date,
    end_date: dt.date,
    granted_hours: Decimal,
    used_seconds: int,
    budget: Decimal | None,
    spend: Decimal,
    sums: Mapping[int, tuple[int, Decimal]],
) -> Burn:
    """The burn of one allocation from its ledger figures and `sums` ({window: (GPU-seconds,
    money)} charged in each window). Pure: no query."""
    rates = {}
    for window in WINDOWS:
        days = observed_days(start_date, today, window)
        seconds, cost = sums.get(window, (0, ZERO))
        rates[window] = Rate(
            window=window,
            days=days,
            gpu_hours_per_day=per_day(Decimal(seconds) / 3600, days),
            cost_per_day=per_day(Decimal(cost), days) if budget is not None else None,
        )
    rate = rates[PROJECTION_WINDOW]
    remaining = granted_hours - Decimal(used_seconds) / 3600
    money_left = None if budget is None else budget - spend
    projectable = rate.days >= MIN_PROJECTION_DAYS
    hours_out = run_out(today, remaining, rate.gpu_hours_per_day) if projectable else None
    money_out = (
        run_out(today, money_left, rate.cost_per_day)
        if projectable and money_left is not None
        else None
    )
    return Burn(
        today=today,
        end_date=end_date,
        rate_7d=rates[7],
        rate_30d=rates[30],
        runs_out_gpu_hours=hours_out,
        runs_out_budget=money_out,
        rate_basis=_rate_basis(today, start_date, rates),
        runs_out_basis=_runs_out_basis(
            projectable=projectable, rate=rate, remaining=remaining, money_left=money_left
        ),
    )


def _rate_basis(today: dt.date, start_date: dt.date, rates: Mapping[int, Rate]) -> str:
    if rates[PROJECTION_WINDOW].days == 0:
        return (
            f"No whole day of use yet: the allocation starts on {start_date.isoformat()} and "
            "rates count whole days before today."
        )
    spans = ", ".join(
        f"the last {w} days over {r.days} day{'s' if r.days != 1 else ''}" for w, r in rates.items()
    )
    short = any(r.days < w for w, r in rates.items())
    return (
        f"Use charged by records whose period ended in the whole days before "
        f"{today.isoformat()} (today not counted), per day: {spans}"
        + (f" (the allocation started on {start_date.isoformat()})" if short else "")
        + "."
    )


def _runs_out_basis(
    *, projectable: bool, rate: Rate, remaining: Decimal, money_left: Decimal | None
) -> str:
    if not projectable:
        return (
            f"{NOT_ENOUGH_DATA.capitalize()}: it needs {MIN_PROJECTION_DAYS} whole days of "
            f"history, the allocation has {rate.days}."
        )
    if remaining <= 0:
        return "All granted GPU-hours are charged."
    if not rate.gpu_hours_per_day:
        return "No use in the last 7 days: at that rate nothing runs out."
    basis = (
        f"At the 7-day rate ({rounded(rate.gpu_hours_per_day)} GPU-hours a day): remaining = "
        f"granted - charged ({rounded(remaining)} GPU-hours; reservations of unfinished work "
        "not counted) / rate"
    )
    if money_left is not None and rate.cost_per_day is not None:
        basis += (
            f"; budget: budget - spent ({rounded(money_left)}) / {rounded(rate.cost_per_day)} a day"
        )
    return basis + "."


# Reading the sums ----------------------------------------------------------------------------


def _key(what: str, window: int) -> str:
    return f"burn_{what}_{window}d"


def burn_annotations(today: dt.date) -> dict[str, Any]:
    """The window sums as correlated subqueries of an allocation row: for each window, the
    GPU-seconds and money of the records whose period ended in it."""
    found: dict[str, Any] = {}
    for window in WINDOWS:
        start, end = window_bounds(today, window)
        records = (
            UsageRecord.objects.filter(
                allocation_id=OuterRef("pk"), period_end__gte=start, period_end__lt=end
            )
            .order_by()
            .values("allocation_id")
        )
        found[_key("gpu_seconds", window)] = Coalesce(
            Subquery(
                records.annotate(total=Sum("gpu_seconds")).values("total")[:1],
                output_field=BigIntegerField(),
            ),
            Value(0),
        )
        found[_key("cost", window)] = Coalesce(
            Subquery(records.annotate(total=Sum("cost")).values("total")[:1], output_field=_MONEY),
            Value(ZERO),
            output_field=_MONEY,
        )
    return found


def with_burn(rows: QuerySet[Allocation], today: dt.date | None = None) -> QuerySet[Allocation]:
    """`rows`, each with its window sums (no extra query): read them with `burn_of`."""
    return rows.annotate(**burn_annotations(today or timezone.localdate()))


def _sums(values: Mapping[str, Any]) -> dict[int, tuple[int, Decimal]]:
    return {
        w: (int(values[_key("gpu_seconds", w)]), Decimal(values[_key("cost", w)])) for w in WINDOWS
    }


def burn_of(
    allocation: Allocation, sums: Mapping[str, Any] | None = None, today: dt.date | None = None
) -> Burn:
    """The burn of an allocation read by `with_burn` (or given its `sums` row). Its ledger
    columns, grant, budget and dates must be loaded."""
    values = sums if sums is not None else vars(allocation)
    return burn_from(
        today=today or timezone.localdate(),
        start_date=allocation.start_date,
        end_date=allocation.end_date,
        granted_hours=allocation.gpu_hours,
        used_seconds=allocation.gpu_seconds_used,
        budget=allocation.budget,
        spend=allocation.spend,
        sums=_sums(values),
    )


def _window_sums(ids: Iterable[int], today: dt.date) -> dict[int, dict[str, Any]]:
    """{allocation id: its window sums}, read in one grouped query over the widest window's
    records (the index on allocation and period end); an allocation without any is all zero."""
    start, end = window_bounds(today, max(WINDOWS))
    sums: dict[str, Any] = {}
    for window in WINDOWS:
        inside = Q(period_end__gte=window_bounds(today, window)[0])
        sums[_key("gpu_seconds", window)] = Sum("gpu_seconds", filter=inside)
        sums[_key("cost", window)] = Sum("cost", filter=inside)
    rows: Iterable[Mapping[str, Any]] = (
        UsageRecord.objects.filter(allocation_id__in=ids, period_end__gte=start, period_end__lt=end)
        .order_by()
        .values("allocation_id")
        .annotate(**sums)
    )
    found = {row["allocation_id"]: row for row in rows}
    # A window with no records in it sums to NULL: nothing used is 0.
    return {pk: {key: (found[pk][key] if pk in found else 0) or 0 for key in sums} for pk in ids}


def burns_of(allocations: Iterable[Allocation], today: dt.date | None = None) -> dict[int, Burn]:
    """{allocation id: burn} for loaded allocations, their window sums read in one query."""
    today = today or timezone.localdate()
    rows = {a.pk: a for a in allocations}
    if not rows:
        return {}
    return {
        pk: burn_of(rows[pk], sums, today) for pk, sums in _window_sums(list(rows), today).items()
    }


def allocation_burn(allocation: Allocation, today: dt.date | None = None) -> Burn:
    """The burn of one loaded allocation (one query)."""
    return burns_of([allocation], today)[allocation.pk]
