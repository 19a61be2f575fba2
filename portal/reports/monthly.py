"""The report's ledger figures from the monthly rollups (allocations/rollups.py).

By PI, project or facility and by month, the report's GPU-hours, cost and their split read
`UsageMonth` rows (kept by the ledger's writes, checked by its reconcile): twelve rows an
allocation for a year, whatever the number of records. A `since` inside a month reads that
first part month from the records (bounded to those days, by the records' index) and the whole
months after it from the rollups. By week, or by user (a job's launcher, which the rollups do not
keep), the report sums the records themselves (portal/reports/selectors.py). A `Window` names
the rows one part of a report sums: the settled months (portal/reports/settled.py) or the rest.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db.models import DateField, Q, QuerySet, Sum
from django.db.models.functions import Coalesce, TruncMonth
from django.utils import timezone

from allocations.models import UsageMonth, UsageRecord
from allocations.rollups import NOTEBOOK

KEY = {"pi": "project__pi__username", "project": "project__code", "facility": "facility__name"}
#: The id of what a report groups by, from an allocation.
GROUP_ID = {"pi": "project__pi_id", "project": "project_id", "facility": "facility_id"}
#: A ledger record a notebook session charged (allocations/rollups.py's rule).
_NOTEBOOK = Q(job_id__isnull=True, external_id__startswith=NOTEBOOK)


def next_month(day: dt.date) -> dt.date:
    """The first day of the month after `day`'s."""
    return (day.replace(day=28) + dt.timedelta(days=4)).replace(day=1)


def at_midnight(day: dt.date) -> dt.datetime:
    """The day's first instant in the portal's time zone (a date compared with a DateTimeField
    would be a naive datetime, which Django warns about and reads the same way)."""
    return timezone.make_aware(dt.datetime.combine(day, dt.time.min))


def first_whole_month(since: dt.date | None) -> dt.date | None:
    """The first month wholly inside the report (None: all of them)."""
    if since is None or since.day == 1:
        return since
    return next_month(since)


def scoped(qs: QuerySet, project_ids, prefix: str) -> QuerySet:
    return qs if project_ids is None else qs.filter(**{f"{prefix}project_id__in": project_ids})


def _part_month(project_ids, since: dt.date | None) -> QuerySet | None:
    """The records of the days before the first whole month, or None."""
    whole = first_whole_month(since)
    if since is None or whole is None or whole == since:
        return None
    return scoped(
        UsageRecord.objects.filter(
            period_start__gte=at_midnight(since), period_start__lt=at_midnight(whole)
        ),
        project_ids,
        "allocation__",
    )


def _months(project_ids, since: dt.date | None) -> QuerySet:
    rows = scoped(UsageMonth.objects.all(), project_ids, "allocation__")
    whole = first_whole_month(since)
    return rows.filter(month__gte=whole) if whole else rows


@dataclass(frozen=True)
class Window:
    """Which of the ledger's rows a part of the report sums: the rollup rows (`months`) and the
    records of a part month before them (`part`, or None)."""

    months: QuerySet
    part: QuerySet | None = None


def live_window(project_ids, since: dt.date | None, settled: list[dt.date]) -> Window:
    """The report's rollups but those of the `settled` months (which portal/reports/settled.py
    sums once), and the part month before its first whole month."""
    return Window(
        _months(project_ids, since).filter(_outside(settled)), _part_month(project_ids, since)
    )


def _outside(settled: list[dt.date]) -> Q:
    """Months before, between and after the runs of consecutive `settled` months: ranges, so
    each is a range of the (month, allocation) index, not a scan of every month for a NOT IN."""
    q, start = Q(), None
    for month in sorted(settled):
        if start is None:
            q |= Q(month__lt=month)
        elif start < month:
            q |= Q(month__gte=start, month__lt=month)
        start = next_month(month)
    return q | Q(month__gte=start) if start is not None else Q()


def settled_window(project_ids, settled: list[dt.date], allocations=None) -> Window:
    """The rollup rows of the `settled` months in the scope, of these allocations only where
    given."""
    rows = scoped(UsageMonth.objects.filter(month__in=settled), project_ids, "allocation__")
    return Window(rows if allocations is None else rows.filter(allocation_id__in=allocations))


def usage_by_allocation(window: Window) -> QuerySet:
    """(allocation id, seconds, cost, job seconds, notebook seconds) of the window's rollup
    rows, summed by allocation: one row an allocation, no join."""
    return (
        window.months.values_list("allocation_id")
        .annotate(
            Sum("gpu_seconds"), Sum("cost"), Sum("job_gpu_seconds"), Sum("notebook_gpu_seconds")
        )
        .order_by()
    )


def usage_cells(window: Window) -> dict[tuple, dict]:
    """(allocation id, month) -> total_seconds, total_cost, and the seconds charged by portal
    jobs (job_seconds) and by notebooks (notebook_seconds), which `split_of` adds up. The
    rollup rows as they are (one an allocation a month: nothing for the database to group, and
    no sums to convert row by row; a centre's year is 52,000 of them), then the part month's
    records summed by allocation. Two queries at most; the caller names and folds the cells
    (cells.LiveNames)."""
    rows = window.months.values_list(
        "allocation_id", "month", "gpu_seconds", "cost", "job_gpu_seconds", "notebook_gpu_seconds"
    )
    cells: dict[tuple, dict] = {
        (pk, month): {
            "total_seconds": seconds,
            "total_cost": cost,
            "job_seconds": jobs,
            "notebook_seconds": notebooks,
        }
        for pk, month, seconds, cost, jobs, notebooks in rows.order_by()
    }
    if window.part is not None:
        part = (
            window.part.annotate(p=TruncMonth("period_start", output_field=DateField()))
            .values("allocation_id", "p")
            .annotate(
                total_seconds=Sum("gpu_seconds"),
                total_cost=Sum("cost"),
                job_seconds=Sum("gpu_seconds", filter=Q(job_id__isnull=False)),
                notebook_seconds=Sum("gpu_seconds", filter=_NOTEBOOK),
            )
            .order_by()
        )
        for row in part:
            # The part month has no rollup row in the window.
            cells[(row.pop("allocation_id"), row.pop("p"))] = row
    return cells


def split_of(cells: dict[tuple, dict]) -> dict[str, int]:
    """`split_seconds` of the window whose `usage_cells` these are, added up from them."""
    total = jobs = notebooks = 0
    for cell in cells.values():
        total += cell["total_seconds"] or 0
        jobs += cell["job_seconds"] or 0
        notebooks += cell["notebook_seconds"] or 0
    return {"total": int(total), "jobs": int(jobs), "notebooks": int(notebooks)}


def split_seconds(window: Window) -> dict[str, int]:
    """Charged seconds in all (`total`) and by what charged them: `jobs` (records of a portal
    job), `notebooks` (of a notebook session). Two queries at most."""
    sums = window.months.aggregate(
        total=Coalesce(Sum("gpu_seconds"), 0),
        jobs=Coalesce(Sum("job_gpu_seconds"), 0),
        notebooks=Coalesce(Sum("notebook_gpu_seconds"), 0),
    )
    if window.part is not None:
        extra = window.part.aggregate(
            total=Coalesce(Sum("gpu_seconds"), 0),
            jobs=Coalesce(Sum("gpu_seconds", filter=Q(job_id__isnull=False)), 0),
            notebooks=Coalesce(Sum("gpu_seconds", filter=_NOTEBOOK), 0),
        )
        sums = {key: sums[key] + extra[key] for key in sums}
    return {key: int(value) for key, value in sums.items()}


def split_hours(seconds: dict[str, int]) -> dict[str, float]:
    """GPU-hours by what charged them: jobs, notebooks and `other` (records of neither: work on
    the accounts outside the portal); they sum to the totals."""
    other = seconds["total"] - seconds["jobs"] - seconds["notebooks"]
    return {
        "jobs": seconds["jobs"] / 3600,
        "notebooks": seconds["notebooks"] / 3600,
        "other": other / 3600,
    }


def seconds_by_facility(window: Window) -> dict[int, int]:
    """Charged seconds per facility (each counted in its own unit). Two queries at most."""
    totals: dict[int, int] = {}
    rows = window.months.values("allocation__facility_id").annotate(s=Sum("gpu_seconds"))
    extra = (
        window.part.values("allocation__facility_id").annotate(s=Sum("gpu_seconds"))
        if window.part is not None
        else []
    )
    for row in [*rows.order_by(), *extra]:
        key = row["allocation__facility_id"]
        totals[key] = totals.get(key, 0) + int(row["s"] or 0)
    return totals
