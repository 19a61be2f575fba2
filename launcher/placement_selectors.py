"""The reads placement needs (launcher/services/placement.py, docs/placement.md): the
allocations a user may place work on, a facility's recent waits and its queue, the
recommender's calibration ratios per node type, and placed jobs' predicted against real wait
and finish per facility. Each is one query (bounded), whatever the number of rows."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone

from allocations.models import Allocation
from allocations.selectors import User, member_project_ids
from benchmarks.calibration import calibration_points

from .models import Job
from .placement.accuracy import Measured, PlacementError, placement_errors
from .placement.wait import HISTORY_DAYS, HISTORY_SAMPLE, Running
from .placement.words import duration_text

# How many placed jobs the error table reads (the most recent ones).
ERROR_ROWS_LIMIT = 5000


def placeable_allocations(user: User, *, project_id: int | None = None) -> QuerySet[Allocation]:
    """Every allocation of the projects `user` is a member of (whatever its state: placement
    lists the ones that cannot take work with the reason), optionally of one project only.
    Never another project's, staff and reviewers included: placement launches as the user."""
    if not user.is_authenticated:
        return Allocation.objects.none()
    ids = member_project_ids(user)
    if project_id is not None:
        ids = [i for i in ids if i == project_id]
    return (
        Allocation.objects.filter(project_id__in=ids)
        .select_related("facility", "node_type", "project")
        .order_by("facility__slug", "pk")
    )


def wait_history(facility_id: int, *, now: dt.datetime | None = None) -> list[float]:
    """Seconds from launch to start of the facility's last HISTORY_SAMPLE single jobs that
    started in the last HISTORY_DAYS days (sweep cells wait on their concurrency, not on the
    facility), most recent first."""
    now = now or timezone.now()
    rows = (
        Job.objects.filter(
            allocation__facility_id=facility_id,
            sweep__isnull=True,
            started_at__isnull=False,
            started_at__gte=now - dt.timedelta(days=HISTORY_DAYS),
        )
        .order_by("-started_at")
        .values_list("created_at", "started_at")[:HISTORY_SAMPLE]
    )
    return [max(0.0, (s - c).total_seconds()) for c, s in rows if s is not None]


def wait_pairs(facility_id: int, *, now: dt.datetime | None = None) -> list[tuple[float, float]]:
    """(uncorrected predicted, real) wait in seconds of the facility's last HISTORY_SAMPLE
    placed single jobs that started in the last HISTORY_DAYS days, most recent first: what
    `calibrated` learns the facility's bias from. The uncorrected figure is the chosen
    option's `wait.raw_seconds` in the job's placement (its predicted wait before that)."""
    now = now or timezone.now()
    rows = (
        Job.objects.filter(
            allocation__facility_id=facility_id,
            sweep__isnull=True,
            predicted_wait_seconds__isnull=False,
            started_at__isnull=False,
            started_at__gte=now - dt.timedelta(days=HISTORY_DAYS),
        )
        .order_by("-started_at")
        .values_list(
            "predicted_wait_seconds", "placement", "allocation_id", "created_at", "started_at"
        )[:HISTORY_SAMPLE]
    )
    pairs = []
    for predicted, placement, allocation_id, created, started in rows:
        if predicted is None or started is None:
            continue  # the query excludes them; this tells the type
        chosen = next(
            (
                o
                for o in (placement or {}).get("options", [])
                if o.get("allocation") == allocation_id
            ),
            None,
        )
        raw = ((chosen or {}).get("wait") or {}).get("raw_seconds", predicted)
        pairs.append((float(raw), max(0.0, (started - created).total_seconds())))
    return pairs


def _run_seconds(job: Job) -> float:
    wall = job.wall_time_minutes * 60.0
    if job.predicted_hours is None:
        return wall
    return min(wall, float(job.predicted_hours) * 3600)


def facility_queue(
    facility_id: int, *, now: dt.datetime | None = None
) -> tuple[list[Running], list[Running]]:
    """The facility's running jobs (slots held, seconds until they are predicted to end) and
    the jobs waiting for a slot, oldest first (slots, predicted run seconds): what a facility
    that knows its slots starts next."""
    now = now or timezone.now()
    live = (
        Job.objects.filter(
            allocation__facility_id=facility_id,
            held=False,
            state__in=(
                Job.State.QUEUED,
                Job.State.SUBMITTING,
                Job.State.PENDING,
                Job.State.RUNNING,
            ),
        )
        .order_by("created_at", "pk")
        .only("gpus", "state", "wall_time_minutes", "predicted_hours", "started_at", "created_at")
    )
    running: list[Running] = []
    waiting: list[Running] = []
    for job in live:
        slots = max(job.gpus, 1)
        if job.state == Job.State.RUNNING:
            began = job.started_at or job.created_at
            left = _run_seconds(job) - (now - began).total_seconds()
            running.append(Running(slots, max(0.0, left)))
        else:
            waiting.append(Running(slots, _run_seconds(job)))
    return running, waiting


def calibration_ratios() -> dict[str, list[float]]:
    """measured / predicted hours of past jobs, per node type as "name (facility slug)" (one
    query: benchmarks/calibration.py)."""
    ratios: dict[str, list[float]] = defaultdict(list)
    for point in calibration_points():
        if point.predicted_hours > 0:
            ratios[point.node_type].append(point.measured_hours / point.predicted_hours)
    return dict(ratios)


def measured_placements(*, facility_ids: Sequence[int] | None = None) -> list[Measured]:
    """Placed jobs that started: predicted and real wait, and finish once they ended (seconds
    from their launch), per facility (slug), most recent first (ERROR_ROWS_LIMIT)."""
    rows = Job.objects.filter(predicted_wait_seconds__isnull=False, started_at__isnull=False)
    if facility_ids is not None:
        rows = rows.filter(allocation__facility_id__in=list(facility_ids))
    found: list[Measured] = []
    for slug, wait, finish, created, started, finished in (
        rows.order_by("-created_at")
        .values_list(
            "allocation__facility__slug",
            "predicted_wait_seconds",
            "predicted_finish_at",
            "created_at",
            "started_at",
            "finished_at",
        )[:ERROR_ROWS_LIMIT]
        .iterator()
    ):
        if wait is None or started is None:
            continue  # the query excludes them; this tells the type
        found.append(
            Measured(
                facility=slug,
                predicted_wait=float(wait),
                real_wait=max(0.0, (started - created).total_seconds()),
                predicted_finish=None if finish is None else (finish - created).total_seconds(),
                real_finish=None if finished is None else (finished - created).total_seconds(),
            )
        )
    return found


def placement_error_table() -> list[PlacementError]:
    """Per facility: |predicted - real| wait and finish of placed jobs, median and 90th
    percentile, with n (the calibration page and GET placements/calibration/)."""
    return placement_errors(measured_placements())


def placement_error_rows() -> list[dict[str, Any]]:
    """The table as dicts, each figure also in words (`<name>_text`): the API's rows and the
    calibration page's (benchmarks/views.py reaches it through settings.PORTAL_PLACEMENT_ERRORS:
    the benchmarks app sits below the launcher)."""
    rows = []
    for row in placement_error_table():
        values = dict(row.__dict__)
        for name in ("wait_median", "wait_p90", "finish_median", "finish_p90"):
            value = values[name]
            values[f"{name}_text"] = "-" if value is None else duration_text(value)
        rows.append(values)
    return rows
