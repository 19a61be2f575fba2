"""Which jobs the report counts from their rows, and which from the monthly rollups.

By PI, project or facility and by month, the months the hourly rollup has settled
(launcher/job_months.py: `JobMonth`, one row an allocation a month, and `JobMonthSize` by
size) are read from them; the rest (the current month, a month with a job still running, the
part of a month before `since`) from the jobs, by index ranges on `created_at`. By user or by
week, every job is counted from its row. The p90 wait is always taken from the rows: a
percentile does not add up across months.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db.models import F, Q, QuerySet, Sum

from launcher.job_months import JOB_COUNTS
from launcher.models import JobMonth, JobMonthSize, RolledMonth

from .monthly import KEY, at_midnight, first_whole_month, next_month


@dataclass
class JobScope:
    """The jobs counted from their rows (`live`, a filter of created_at ranges) and the rollup
    rows standing for the others (`rolled`, None when none are used)."""

    live: Q = field(default_factory=Q)
    rolled: QuerySet | None = None
    sizes: QuerySet | None = None  # the same months' JobMonthSize rows
    rolled_at: dt.datetime | None = None
    months: list[dt.date] = field(default_factory=list)
    rolled_at_by_month: dict[dt.date, dt.datetime] = field(default_factory=dict)


def job_scope(group_by: str, period: str, project_ids, since: dt.date | None) -> JobScope:
    everything = JobScope(live=Q(created_at__gte=at_midnight(since)) if since else Q())
    if period != "month" or group_by not in KEY:
        return everything
    whole = first_whole_month(since)
    rolled = RolledMonth.objects.all()
    if whole is not None:
        rolled = rolled.filter(month__gte=whole)
    found = dict(rolled.values_list("month", "rolled_at"))
    if not found:
        return everything
    months = sorted(found)
    rows = JobMonth.objects.filter(month__in=months)
    sizes = JobMonthSize.objects.filter(month__in=months)
    # The live part: from `since` (or the beginning) to the first rolled month, between rolled
    # months, and from the last one on; positive ranges, so each is an index range scan.
    live, start = Q(), at_midnight(since) if since else None
    for month in months:
        end = at_midnight(month)
        if start is None:
            live |= Q(created_at__lt=end)
        elif start < end:
            live |= Q(created_at__gte=start, created_at__lt=end)
        start = at_midnight(next_month(month))
    live |= Q(created_at__gte=start)
    if project_ids is not None:
        rows = rows.filter(allocation__project_id__in=project_ids)
        sizes = sizes.filter(allocation__project_id__in=project_ids)
    return JobScope(
        live=live,
        rolled=rows.order_by(),
        sizes=sizes.order_by(),
        rolled_at=max(found.values()),
        months=months,
        rolled_at_by_month=found,
    )


#: The utilisation sums of a rollup row, by source: jobs, weighted sum, GPU-seconds, plain sum.
UTIL_PARTS = ("jobs", "weighted", "seconds", "sum")
UTIL_COLUMNS = tuple(f"{source}_util_{part}" for source in JobMonth.SOURCES for part in UTIL_PARTS)
#: What a (group, month) cell of the rollups sums: the job counts the report's rows show.
CELL_SUMS = JOB_COUNTS
#: What the rollups sum per group only: waits and utilisation, which the report totals.
GROUP_SUMS = ("waited", "wait_seconds", *UTIL_COLUMNS)


def no_facts() -> dict[str, Any]:
    return {"waited": 0, "wait_seconds": 0.0, "sizes": {}, "utilisation": {}}


def rolled_cells(scope: JobScope, name_of: Callable[[int], Any]) -> dict[tuple, dict[str, Any]]:
    """(group, month) -> the CELL_SUMS of the rollups: the rows as they are, one an allocation a
    month (nothing for the database to join or group, and no sums to convert row by row: a
    centre's year is 52,000 of them), each named by `name_of` its allocation's id and added up
    here. One query."""
    cells: dict[tuple, dict[str, Any]] = {}
    if scope.rolled is None:
        return cells
    for pk, month, jobs, failed, short, short_or_failed in scope.rolled.values_list(
        "allocation_id", "month", *CELL_SUMS
    ):
        key = (name_of(pk), month)
        cell = cells.get(key)
        if cell is None:
            cells[key] = {
                "jobs": jobs,
                "failed": failed,
                "short": short,
                "short_or_failed": short_or_failed,
            }
        else:
            cell["jobs"] += jobs
            cell["failed"] += failed
            cell["short"] += short
            cell["short_or_failed"] += short_or_failed
    return cells


def rolled_facts(scope: JobScope, group_by: str) -> dict[str, Any]:
    """Waits (count and total) and utilisation by group and source, and sizes, from the
    rollups. Two queries: a group's row (not a row a group a month: a year by PI is 2,500
    groups, not 26,000 cells) and a row a size."""
    facts = no_facts()
    if scope.rolled is None or scope.sizes is None:
        return facts
    utilisation: dict[tuple, list] = facts["utilisation"]
    rows = (
        scope.rolled.annotate(g=F(f"allocation__{KEY[group_by]}"))
        .values_list("g")
        .annotate(**{f"t_{c}": Sum(c) for c in GROUP_SUMS})
    )
    for group, *sums in rows:
        row = dict(zip(GROUP_SUMS, sums, strict=True))
        facts["waited"] += row["waited"] or 0
        facts["wait_seconds"] += row["wait_seconds"] or 0.0
        for source in JobMonth.SOURCES:
            values = [row[f"{source}_util_{part}"] or 0 for part in UTIL_PARTS]
            if values[0]:
                utilisation[(group, source)] = values
    for r in scope.sizes.values("gpus").annotate(n=Sum("jobs"), s=Sum("gpu_seconds")):
        if r["n"]:
            facts["sizes"][r["gpus"]] = [r["n"], r["s"]]
    return facts
