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

from django.db.models import Q, QuerySet, Sum

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


def rollup_rows(months, project_ids, allocations=None) -> QuerySet:
    """The rollup rows of these months in the scope (every project: None), of these
    allocations only where given."""
    rows = JobMonth.objects.filter(month__in=months)
    if project_ids is not None:
        rows = rows.filter(allocation__project_id__in=project_ids)
    if allocations is not None:
        rows = rows.filter(allocation_id__in=allocations)
    return rows.order_by()


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
    rows = rollup_rows(months, project_ids)
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


def rolled_by_group(
    scope: JobScope, name_of: Callable[[int], Any]
) -> tuple[dict[Any, list], dict[str, Any]]:
    """Each group's CELL_SUMS over the rolled months, and the facts: waits (count and total),
    utilisation by group and source, and sizes. The rollups summed by allocation in the
    database (a row an allocation, no join: a centre's year is 12,000 rows, not 52,000), named
    by `name_of` and added up here; then a row a size. Two queries."""
    counts: dict[Any, list] = {}
    facts = no_facts()
    if scope.rolled is None or scope.sizes is None:
        return counts, facts
    groups: dict[Any, list] = {}
    rows = scope.rolled.values_list("allocation_id").annotate(
        **{f"t_{c}": Sum(c) for c in (*CELL_SUMS, *GROUP_SUMS)}
    )
    for pk, *sums in rows:
        group = name_of(pk)
        found = groups.get(group)
        if found is None:
            groups[group] = sums
        else:
            for i, value in enumerate(sums):
                found[i] += value
    width = len(CELL_SUMS)
    utilisation: dict[tuple, list] = facts["utilisation"]
    for group, sums in groups.items():
        counts[group] = sums[:width]
        row = dict(zip(GROUP_SUMS, sums[width:], strict=True))
        facts["waited"] += row["waited"]
        facts["wait_seconds"] += row["wait_seconds"]
        for source in JobMonth.SOURCES:
            values = [row[f"{source}_util_{part}"] for part in UTIL_PARTS]
            if values[0]:
                utilisation[(group, source)] = values
    for r in scope.sizes.values("gpus").annotate(n=Sum("jobs"), s=Sum("gpu_seconds")):
        if r["n"]:
            facts["sizes"][r["gpus"]] = [r["n"], r["s"]]
    return counts, facts
