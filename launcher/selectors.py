"""Reads scoped to what a user may see: jobs and sweeps of allocations visible to them.
Others' objects are simply absent (404). Aggregates are SQL, never Python loops over rows."""
from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.db.models import Count, DecimalField, Q, QuerySet, Sum, Value
from django.db.models.functions import Coalesce

from allocations.models import Allocation, Project
from allocations.selectors import User, allocation_usage_totals, visible_allocations

from . import sweepgrid
from .models import Job, Sweep


def visible_jobs(user: User) -> QuerySet[Job]:
    """Jobs of allocations the user can see (reviewers: all)."""
    allocations = visible_allocations(user).values("pk")
    return Job.objects.select_related("allocation__project", "allocation__facility",
                                      "created_by").filter(allocation__in=allocations)


def visible_sweeps(user: User) -> QuerySet[Sweep]:
    allocations = visible_allocations(user).values("pk")
    return Sweep.objects.select_related("allocation__project", "allocation__facility",
                                        "created_by").filter(allocation__in=allocations)


def launchable_allocations(user: User) -> QuerySet[Allocation]:
    """Allocations the user may launch against: members of the project only (not reviewers)."""
    if not user.is_authenticated:
        return Allocation.objects.none()
    return Allocation.objects.select_related("facility", "node_type", "project").filter(
        project__in=Project.objects.filter(memberships__user=user))


def reserved_gpu_hours(allocation_id: int) -> Decimal:
    """GPU-hours promised to unfinished jobs but not charged yet (their estimate less what
    accounting has already recorded for them)."""
    hours = DecimalField(max_digits=14, decimal_places=3)
    row = Job.objects.filter(allocation_id=allocation_id).exclude(state__in=Job.FINAL).aggregate(
        est=Coalesce(Sum("estimate_gpu_hours"), Value(Decimal(0)), output_field=hours),
        used=Coalesce(Sum("gpu_seconds"), Value(0)))
    return max(Decimal(row["est"]) - Decimal(row["used"]) / 3600, Decimal(0))


def remaining_gpu_hours(allocation: Allocation) -> Decimal:
    """Granted minus charged minus reserved by unfinished jobs (never below zero)."""
    used = allocation_usage_totals(allocation.pk)["gpu_hours"]
    left = Decimal(allocation.gpu_hours) - used - reserved_gpu_hours(allocation.pk)
    return max(left, Decimal(0)).quantize(Decimal("0.001"))


def sweep_counts(sweep: Sweep) -> dict[str, int]:
    """How many cells are in each state (one query)."""
    rows = sweep.jobs.order_by().values("state").annotate(n=Count("pk"))
    counts = {state: 0 for state in Job.State.values}
    counts.update({r["state"]: r["n"] for r in rows})
    return counts


def sweep_leaderboard(sweep: Sweep, *, sort_by: str | None = None,
                      level: str = "patient") -> list[dict[str, Any]]:
    """Mean cross-validated metrics per hyper-parameter combination with 95% intervals."""
    grid = sweepgrid.validate(sweep.grid)
    cells = sweepgrid.expand(grid)
    metrics = dict(sweep.jobs.filter(state=Job.State.SUCCEEDED, metrics__isnull=False)
                   .values_list("array_index", "metrics"))
    return sweepgrid.leaderboard([(c, metrics.get(c["index"])) for c in cells],
                                 sort_by=sort_by or sweep.sort_by, level=level)


def allocation_jobs(allocation: Allocation, *, limit: int = 50) -> QuerySet[Job]:
    """The allocation's single jobs, newest first (caller already checked visibility)."""
    return allocation.jobs.filter(sweep__isnull=True).select_related("created_by")[:limit]


def allocation_sweeps(allocation: Allocation, *, limit: int = 20) -> QuerySet[Sweep]:
    """The allocation's sweeps with finished and running cell counts (one query)."""
    return allocation.sweeps.annotate(
        cells_done=Count("jobs", filter=Q(jobs__state__in=Job.FINAL)),
        cells_running=Count("jobs", filter=Q(jobs__state=Job.State.RUNNING)),
    ).order_by("-created_at")[:limit]
