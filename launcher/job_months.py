"""The usage report's job figures rolled up by allocation and month (`JobMonth`).

A year's report at a centre counts hundreds of thousands of jobs; summing them at every view
took seconds. Once a month is *settled* (it has ended, every job created in it is final, and
none of them finished within `SETTLE`, so their charges are in), its jobs no longer change
what the report says of them, and the hourly beat task `launcher.roll_job_months` writes their
sums per allocation (this module). The report reads settled months from these rows and counts
the others (the current month, a month with a job still running) from the jobs themselves
(portal/reports/job_rollups.py); the page says when the rows were written.

Each hourly pass rewrites the settled months of the last RECENT_MONTHS (and any month settled
since the last pass) from the jobs, in three grouped scans (`JobMonth`, and `JobMonthSize` by
size); once a day it rewrites every settled month, so a job changed long after its month
settled (a late charge) is right again within a day. bench/bench_scale.py measures both passes at a million jobs.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from typing import Any

from django.db import transaction
from django.db.models import Count, DurationField, ExpressionWrapper, F, FloatField, Min, Q, Sum
from django.db.models.functions import TruncMonth
from django.utils import timezone

from .models import Job, JobMonth, JobMonthSize, RolledMonth

SETTLE = dt.timedelta(days=1)
RECENT_MONTHS = 3  # an hourly pass rewrites these settled months (and any newly settled)
FULL_EVERY = dt.timedelta(hours=24)  # and every settled month once a day
# The usage report's rules for jobs, defined once (the report counts live jobs by them too:
# portal/reports/selectors.py). A job cancelled before it started (a sweep's held cells when the
# sweep is cancelled, a queued job cancelled) ran nothing and charged nothing: not a job the
# report counts. A short run is under a minute; failed is failed or timed out.
SHORT = dt.timedelta(seconds=60)
RAN = ~Q(state=Job.State.CANCELLED, started_at__isnull=True)
FAILED = Q(state__in=[Job.State.FAILED, Job.State.TIMEOUT])
#: What a month's jobs are counted as, by those rules (a job both short and failed counts once
#: in `short_or_failed`).
JOB_COUNTS = ("jobs", "failed", "short", "short_or_failed")
#: A started job's wait: submit to start.
WAIT = ExpressionWrapper(F("started_at") - F("submitted_at"), output_field=DurationField())


def _month(value: Any) -> dt.date:
    return value.date() if isinstance(value, dt.datetime) else value


def first_of_month(now: dt.datetime) -> dt.date:
    return timezone.localtime(now).date().replace(day=1)


def _aware(day: dt.date) -> dt.datetime:
    return timezone.make_aware(dt.datetime.combine(day, dt.time.min))


def settled_months(now: dt.datetime | None = None) -> list[dt.date]:
    """Months with jobs, ended, with no unfinished job and none finished within SETTLE."""
    now = now or timezone.now()
    current = _aware(first_of_month(now))
    before = Job.objects.filter(created_at__lt=current).order_by()
    months = {_month(m) for m in before.dates("created_at", "month")}
    open_jobs = before.exclude(state__in=Job.FINAL)
    recent = before.filter(state__in=Job.FINAL, finished_at__gte=now - SETTLE)
    unsettled = {_month(m) for m in open_jobs.dates("created_at", "month")}
    unsettled |= {_month(m) for m in recent.dates("created_at", "month")}
    return sorted(months - unsettled)


Key = tuple[int, dt.date]  # allocation, month
SizeKey = tuple[int, dt.date, int]  # allocation, month, GPUs


def _cells(jobs) -> tuple[dict[Key, dict[str, Any]], dict[SizeKey, dict[str, int]]]:
    """Three grouped scans, merged per (allocation, month), and the jobs that ran per
    (allocation, month, GPUs) from the first of them."""
    run = ExpressionWrapper(F("finished_at") - F("started_at"), output_field=DurationField())
    by = jobs.annotate(m=TruncMonth("created_at"))
    rows: dict[Key, dict[str, Any]] = defaultdict(dict)
    sizes: dict[SizeKey, dict[str, int]] = {}

    def key(r: dict[str, Any]) -> Key:
        return (r["allocation_id"], _month(r["m"]))

    short = Q(run__lt=SHORT)
    for r in (
        by.filter(RAN)
        .annotate(run=run)
        .values("allocation_id", "m", "gpus")
        .annotate(
            jobs=Count("id"),
            failed=Count("id", filter=FAILED),
            short=Count("id", filter=short),
            short_or_failed=Count("id", filter=FAILED | short),
            seconds=Sum("gpu_seconds"),
        )
    ):
        seconds = int(r["seconds"] or 0)
        sizes[(*key(r), r["gpus"])] = {"jobs": r["jobs"], "gpu_seconds": seconds}
        cell = rows[key(r)]
        for name in JOB_COUNTS:
            cell[name] = cell.get(name, 0) + r[name]
        cell["gpu_seconds"] = cell.get("gpu_seconds", 0) + seconds
    for r in (
        by.filter(started_at__isnull=False, submitted_at__isnull=False)
        .annotate(wait=WAIT)
        .values("allocation_id", "m")
        .annotate(waited=Count("id"), wait_total=Sum("wait"))
    ):
        rows[key(r)].update(waited=r["waited"], wait_seconds=r["wait_total"].total_seconds())
    weighted = ExpressionWrapper(
        F("utilisation_mean") * F("gpu_seconds"), output_field=FloatField()
    )
    for r in (
        by.filter(utilisation_mean__isnull=False, utilisation_source__in=JobMonth.SOURCES)
        .values("allocation_id", "m", "utilisation_source")
        .annotate(
            n=Count("id"), w=Sum(weighted), s=Sum("gpu_seconds"), plain=Sum("utilisation_mean")
        )
    ):
        source = r["utilisation_source"]
        rows[key(r)].update(
            {
                f"{source}_util_jobs": r["n"],
                f"{source}_util_weighted": float(r["w"] or 0),
                f"{source}_util_seconds": int(r["s"] or 0),
                f"{source}_util_sum": float(r["plain"] or 0),
            }
        )
    return rows, sizes


def job_months_rebuild(*, now: dt.datetime | None = None, full: bool = False) -> int:
    """Rewrite settled months from the jobs, and drop the rows of months no longer settled.
    An hourly pass rewrites the settled months among the last RECENT_MONTHS and any month
    settled since the last pass; a full pass (`full`, or when some row is older than FULL_EVERY)
    rewrites every settled month, so a job changed long after its month settled is right again
    within a day. Returns the rows written."""
    now = now or timezone.now()
    months = settled_months(now)
    have = set(RolledMonth.objects.values_list("month", flat=True))
    oldest = RolledMonth.objects.aggregate(at=Min("rolled_at"))["at"]
    if full or oldest is None or oldest < now - FULL_EVERY:
        redo = months
    else:
        recent = first_of_month(now)
        for _ in range(RECENT_MONTHS):
            recent = (recent - dt.timedelta(days=1)).replace(day=1)
        redo = [m for m in months if m >= recent or m not in have]
    stale = (have - set(months)) | set(redo)
    rows: list[JobMonth] = []
    sizes: list[JobMonthSize] = []
    if redo:
        jobs = Job.objects.filter(
            created_at__gte=_aware(redo[0]), created_at__lt=_aware(first_of_month(now))
        ).order_by()
        wanted = set(redo)
        cells, by_size = _cells(jobs)
        rows = [
            JobMonth(allocation_id=pk, month=month, rolled_at=now, **cell)
            for (pk, month), cell in cells.items()
            if month in wanted
        ]
        sizes = [
            JobMonthSize(allocation_id=pk, month=month, gpus=gpus, **cell)
            for (pk, month, gpus), cell in by_size.items()
            if month in wanted
        ]
    with transaction.atomic():
        JobMonth.objects.filter(month__in=stale).delete()
        JobMonthSize.objects.filter(month__in=stale).delete()
        JobMonth.objects.bulk_create(rows, batch_size=5000)
        JobMonthSize.objects.bulk_create(sizes, batch_size=5000)
        RolledMonth.objects.filter(month__in=stale).delete()
        RolledMonth.objects.bulk_create([RolledMonth(month=m, rolled_at=now) for m in redo])
    return len(rows)
