"""Who may see and act on launcher work, and the reads scoped by it: jobs and sweeps of
allocations visible to a user. Others' objects are simply absent (404). Aggregates are SQL,
never Python loops over rows.

The rule (`can_see`, `can_act`, `check_can_act`, `check_can_see`), used by every selector and
service:
- Members of a project see its allocations, jobs and sweeps, and act on them (launch, cancel,
  resume, read logs).
- Reviewers and staff see everyone's work; only staff (`is_staff`, and superusers) act on
  others' work.
- Everyone else does not know the work exists: the services raise `NotVisible`, which the API
  and the pages answer with 404 exactly as for an id that does not exist.
- Someone who may see but not act (a reviewer who is not a member) gets `Forbidden`:
  403 in the API, a message on the page (docs/api.md, "Who may do what").

Also here, the reservations of unfinished jobs in SQL, for the allocation ledger
(allocations/ledger.py; `job_reservations`, `with_reservation`). A job reserves, while it is
not final, what it may still use: its estimate less what has already been charged for it; a
final job reserves nothing (its charges are the truth):

    reserved(job) = max(estimate - charged(job), 0)   while job.state not in Job.FINAL

charged(job) is the larger of the job's own `gpu_seconds` (what its backend copied onto it:
sacct for Slurm, including earlier attempts of a resumed job; the process wall time for local
runs) and the usage records attributed to it (`UsageRecord.job_id`: the instance time of the
cloud workers that ran it). So a running cloud job's reservation shrinks as its instance time
is charged instead of being counted twice. Money works the same way with `estimate_cost`.

Registered from LauncherConfig.ready(): the ledger's write paths measure a job's reservation
before and after each change with it, and its recomputation sums it per allocation
(allocations/ledger.py); the columns they keep are what every read sees.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Iterable, Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any, TypedDict

from django.db.models import (
    Case,
    Count,
    DecimalField,
    F,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Sum,
    Value,
    When,
)
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone

from allocations.ledger import MONEY, SECONDS
from allocations.models import Allocation, UsageRecord
from allocations.roles import acts_on_all_projects, sees_all_projects
from allocations.selectors import (
    User,
    allocation_ledger,
    is_member,
    member_allocation_ids,
    member_project_ids,
)
from core.errors import Forbidden, NotFound

from . import sweepgrid
from .estimates import (
    CURRENCY,
    check_gpus_fit,
    estimate_run,
    estimate_sweep,
    predict,
    sweep_wall_time,
    wall_time_for,
)
from .models import Job, JobCount, Sweep
from .search.spec import expected_fraction

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations


class NotVisible(NotFound):
    """The object is not there for this user (HTTP 404; never says whether it exists)."""


def can_see(user: Any, allocation: Allocation) -> bool:
    return sees_all_projects(user) or is_member(user, allocation.project_id)


def can_act(user: Any, allocation: Allocation) -> bool:
    return acts_on_all_projects(user) or is_member(user, allocation.project_id)


def check_can_act(user: Any, allocation: Allocation, *, what: str) -> None:
    """Raise NotVisible (404) if `user` may not see the allocation's work, Forbidden
    (403) if they may see it but not `what` (e.g. "cancel this job")."""
    if user is None or not can_see(user, allocation):
        raise NotVisible("Not found.")
    if not can_act(user, allocation):
        raise Forbidden(f"Only members of the project (or staff) can {what}.")


def check_can_see(user: Any, allocation: Allocation) -> None:
    """Raise NotVisible (404) unless `user` may see the allocation's work."""
    if user is None or not can_see(user, allocation):
        raise NotVisible("Not found.")


def _sees_everything(user: User) -> bool:
    """Reviewers and staff see every project's rows (allocations.roles.sees_all_projects)."""
    return user.is_authenticated and sees_all_projects(user)


def _scoped(qs: QuerySet, user: User) -> QuerySet:
    """The rows of projects the user is a member of, by their allocations' ids (no join to
    each row's allocation); everything for reviewers and staff."""
    if not user.is_authenticated:
        return qs.none()
    if _sees_everything(user):
        return qs
    return qs.filter(allocation_id__in=member_allocation_ids(user))


def visible_jobs(user: User) -> QuerySet[Job]:
    """Jobs the user may see: their projects' (reviewers and staff: all)."""
    return _scoped(
        Job.objects.select_related("allocation__project", "allocation__facility", "created_by"),
        user,
    )


def visible_jobs_total(user: User) -> int | None:
    """How many jobs `visible_jobs` gives, where that is every job (reviewers and staff): the
    total the database keeps (launcher/models/job_count.py), not a COUNT of the rows. None
    otherwise, or where no total is kept: the caller counts."""
    return JobCount.objects.total() if _sees_everything(user) else None


def visible_sweeps(user: User) -> QuerySet[Sweep]:
    """Sweeps the user may see: their projects' (reviewers and staff: all)."""
    return _scoped(
        Sweep.objects.select_related("allocation__project", "allocation__facility", "created_by"),
        user,
    )


def job_log(*, job_id: int, by: User) -> Job:
    """A job with its log tail, for someone who may see it (NotVisible, a 404, otherwise)."""
    job = visible_jobs(by).filter(pk=job_id).first()
    if job is None:
        raise NotVisible("Not found.")
    return job


def sees_allocations(user: User) -> QuerySet[Allocation]:
    """Allocations whose work the user may see (to name one in a launch: acting on it is the
    service's to check)."""
    qs = Allocation.objects.select_related("facility", "node_type", "project")
    if not user.is_authenticated:
        return qs.none()
    return qs if sees_all_projects(user) else qs.filter(project_id__in=member_project_ids(user))


def reserved_gpu_hours(allocation_id: int) -> Decimal:
    """GPU-hours promised to unfinished jobs but not charged yet: per job, its estimate less
    what has been charged for it, never below zero (`job_reservations` below)."""
    return allocation_ledger(allocation_id).gpu_hours_reserved


def remaining_gpu_hours(allocation: Allocation) -> Decimal:
    """Granted minus charged minus reserved by unfinished jobs (never below zero), exact."""
    return allocation_ledger(allocation.pk).gpu_hours_remaining


# sacct lags squeue: a job's record may arrive a while after the job was seen final.
USAGE_LAG = dt.timedelta(hours=6)


def allocations_owing_usage(*, backends: Iterable[str]) -> QuerySet[Allocation]:
    """Allocations on these backends whose usage must still be read: live ones, and any other
    (expired, closed, exhausted, suspended) until all its jobs are final and the last one
    finished longer than USAGE_LAG ago. Usage is charged whatever the allocation's state."""
    recent = timezone.now() - USAGE_LAG
    owing = Job.objects.filter(Q(finished_at__gte=recent) | ~Q(state__in=Job.FINAL)).values(
        "allocation"
    )
    return (
        Allocation.objects.select_related("facility")
        .filter(facility__backend__in=list(backends))
        .exclude(account_name="")
        .filter(Q(status__in=Allocation.LIVE) | Q(pk__in=owing))
        .exclude(status__in=(Allocation.Status.FAILED,), activated_at=None)
        .order_by("pk")
    )


LATEST = 50


def latest_jobs(allocation: Allocation) -> list[Job]:
    """The allocation's latest 50 jobs of any kind (single jobs and sweep cells), newest first,
    with the columns the allocation page's jobs table and timeline of use show: one query,
    kept on the allocation object, so the page's two tables share it. The caller has checked
    that the user may see them."""
    cached = getattr(allocation, "_latest_jobs", None)
    if cached is None:
        cached = list(
            Job.objects.filter(allocation_id=allocation.pk)
            .order_by("-created_at", "-id")
            .only(
                "sweep_id",
                "params",
                "state",
                "state_reason",
                "progress",
                "estimate_gpu_hours",
                "gpu_seconds",
                "created_at",
            )[:LATEST]
        )
        allocation._latest_jobs = cached  # type: ignore[attr-defined]
    return cached


def allocation_jobs(allocation: Allocation, *, by: User) -> list[Job]:
    """The allocation's latest 50 single jobs, newest first, for someone who may see them
    (NotVisible, a 404, otherwise); only the columns the allocation page's table shows. Taken
    from `latest_jobs` when that holds every job of the allocation (fewer than 50), else read."""
    check_can_see(by, allocation)
    latest = latest_jobs(allocation)
    if len(latest) < LATEST:
        return [job for job in latest if job.sweep_id is None]
    return list(
        Job.objects.filter(allocation_id=allocation.pk, sweep__isnull=True)
        .order_by("-created_at", "-id")
        .only(
            "params",
            "state",
            "state_reason",
            "progress",
            "estimate_gpu_hours",
            "gpu_seconds",
            "created_at",
        )[:LATEST]
    )


def allocation_sweeps(allocation: Allocation, *, by: User) -> list[Sweep]:
    """The allocation's latest 20 sweeps with finished and running cell counts, for someone
    who may see them (NotVisible, a 404, otherwise).

    Every sweep has cells (a grid has at least one, created with the sweep), so when
    `latest_jobs` holds every job of the allocation (fewer than 50) it already says which
    sweeps there are and how their cells stand: no query at all for an allocation without
    sweeps, as most are, and one for the sweeps' names otherwise. Past 50 jobs, one query for
    the sweeps and one for their counts (grouped by sweep)."""
    check_can_see(by, allocation)
    latest = latest_jobs(allocation)
    sweeps = (
        Sweep.objects.filter(allocation_id=allocation.pk)
        .only("name", "size", "estimate_gpu_hours", "created_at")
        .order_by("-created_at")
    )
    counts: Mapping[int | None, Mapping[str, Any]]
    if len(latest) < LATEST:
        cells = [job for job in latest if job.sweep_id is not None]
        if not cells:
            return []
        found = list(sweeps.filter(pk__in={job.sweep_id for job in cells})[:20])
        tally: dict[int | None, dict[str, int]] = {
            sweep.pk: {"done": 0, "running": 0} for sweep in found
        }
        counts = tally
        for job in cells:
            cell_counts = tally.get(job.sweep_id)
            if cell_counts is not None:
                cell_counts["done"] += job.state in Job.FINAL
                cell_counts["running"] += job.state == Job.State.RUNNING
    else:
        found = list(sweeps[:20])
        if not found:
            return []
        counts = {
            row["sweep_id"]: row
            for row in Job.objects.filter(sweep_id__in=[s.pk for s in found])
            .order_by()
            .values("sweep_id")
            .annotate(
                done=Count("pk", filter=Q(state__in=Job.FINAL)),
                running=Count("pk", filter=Q(state=Job.State.RUNNING)),
            )
        }
    for sweep in found:
        row = counts.get(sweep.pk, {})
        sweep.cells_done = row.get("done", 0)  # type: ignore[attr-defined]
        sweep.cells_running = row.get("running", 0)  # type: ignore[attr-defined]
    return found


def sweep_estimate(
    *,
    allocation: Allocation,
    grid: dict[str, Any],
    params: dict[str, Any],
    gpus: int,
    wall_time_minutes: int | None,
    concurrency: int | None = None,
) -> dict[str, Any]:
    """What launching this sweep would reserve (the same numbers `sweep_launch` checks, with
    the same default wall time when none is given), its basis in words, and whether it fits the
    GPU-hours left. Launches nothing. Refuses what `sweep_launch` refuses whatever is left
    (GpusRefused, 400 on `gpus`)."""
    check_gpus_fit(allocation.facility, gpus)
    spec = sweepgrid.validate(grid)
    if wall_time_minutes is None:
        wall_time_minutes = sweep_wall_time(
            allocation=allocation, grid=grid, params=params, gpus=gpus
        )
    estimate = estimate_sweep(
        allocation=allocation,
        params=params,
        fixed=spec.fixed,
        cells=spec.size,
        gpus=gpus,
        wall_time_minutes=wall_time_minutes,
    )
    remaining = remaining_gpu_hours(allocation)
    # A staged sweep (early stopping, a search) reserves only the cells it runs at once; its
    # worst case is every cell to its last epoch, its expected case the rung schedule's.
    at_once = min(concurrency or spec.size, spec.size)
    reserved = estimate.per_cell.gpu_hours * at_once if spec.staged else estimate.total.gpu_hours
    epochs = int({**params, **spec.fixed}.get("epochs", 50))
    fraction = Decimal(str(expected_fraction(spec.early_stopping, epochs)))
    return {
        "cells": spec.size,
        "per_cell_gpu_hours": estimate.per_cell.gpu_hours,
        "total_gpu_hours": estimate.total.gpu_hours,
        "total_cost": estimate.total.cost,
        "currency": CURRENCY,
        "source": estimate.per_cell.source,
        "basis": estimate.basis(
            gpus=gpus, wall_time_minutes=wall_time_minutes, unit=allocation.facility.unit
        ),
        "remaining_gpu_hours": remaining,
        "fits": reserved <= remaining,
        "staged": spec.staged,
        "expected_gpu_hours": (
            (estimate.total.gpu_hours * fraction).quantize(Decimal("0.001"))
            if spec.early_stopping
            else None
        ),
        "expected_basis": (
            f"the rung schedule: 1/{spec.early_stopping.eta} of the configurations go on at each "
            f"rung from epoch {spec.early_stopping.min_epochs}, if they rank at random"
            if spec.early_stopping
            else ""
        ),
    }


def job_estimate(
    *, allocation: Allocation, params: dict[str, Any], gpus: int, wall_time_minutes: int | None
) -> dict[str, Any]:
    """What launching this job would reserve (the estimate `job_launch` checks, before a
    cloud backend prices it, with the same default wall time when none is given), its basis,
    and whether it fits the GPU-hours left. Launches nothing (the command line's `--estimate`).
    Refuses what `job_launch` refuses whatever is left (GpusRefused, 400 on `gpus`)."""
    check_gpus_fit(allocation.facility, gpus)
    prediction = predict(allocation, params, gpus)
    if wall_time_minutes is None:
        wall_time_minutes = wall_time_for(prediction).minutes
    estimate = estimate_run(
        allocation=allocation,
        params=params,
        gpus=gpus,
        wall_time_minutes=wall_time_minutes,
        prediction=prediction,
    )
    remaining = remaining_gpu_hours(allocation)
    return {
        "gpu_hours": estimate.gpu_hours,
        "cost": estimate.cost,
        "currency": CURRENCY,
        "source": estimate.source,
        "basis": estimate.basis,
        "predicted_hours": estimate.predicted_hours,
        "remaining_gpu_hours": remaining,
        "fits": estimate.gpu_hours <= remaining,
    }


def sweep_gpu_seconds(sweep: Sweep) -> int:
    """GPU-seconds charged to the sweep's cells so far (one query)."""
    return sweep.jobs.aggregate(total=Coalesce(Sum("gpu_seconds"), Value(0)))["total"]


def _charged(field: str, output: DecimalField) -> Coalesce:
    rows = (
        UsageRecord.objects.filter(job_id=OuterRef("pk"))
        .order_by()
        .values("job_id")
        .annotate(total=Sum(field))
        .values("total")
    )
    return Coalesce(Subquery(rows, output_field=output), Value(Decimal(0)), output_field=output)


class Reservation(TypedDict):
    """What `with_reservation` annotates on each job."""

    charged_seconds: Decimal
    charged_cost: Decimal
    reserved_seconds: Decimal
    reserved_cost: Decimal


def with_reservation(jobs: QuerySet[Job]) -> QuerySet[WithAnnotations[Job, Reservation]]:
    """Annotate each job with what has been charged for it (`charged_seconds`, `charged_cost`)
    and what it still reserves (`reserved_seconds`, `reserved_cost`: 0 once it is final), so a
    job's page can show its estimate, reservation and charge side by side."""
    open_ = ~Q(state__in=Job.FINAL)
    return jobs.annotate(
        charged_seconds=Greatest(
            F("gpu_seconds"), _charged("gpu_seconds", SECONDS), output_field=SECONDS
        ),
        charged_cost=_charged("cost", MONEY),
    ).annotate(
        reserved_seconds=Case(
            When(
                open_,
                then=Greatest(
                    F("estimate_gpu_hours") * Value(3600) - F("charged_seconds"),
                    Value(Decimal(0)),
                    output_field=SECONDS,
                ),
            ),
            default=Value(Decimal(0)),
            output_field=SECONDS,
        ),
        reserved_cost=Case(
            When(
                open_,
                then=Greatest(
                    F("estimate_cost") - F("charged_cost"), Value(Decimal(0)), output_field=MONEY
                ),
            ),
            default=Value(Decimal(0)),
            output_field=MONEY,
        ),
    )


def job_reservations(
    *, allocation_ids: Collection[int] | None = None, job_ids: Collection[int] | None = None
) -> dict[int, tuple[Decimal, Decimal]]:
    """{allocation id: (GPU-seconds, money)} reserved by the selected unfinished jobs (one
    query): the provider the ledger's write paths and its recomputation ask."""
    jobs = Job.objects.exclude(state__in=Job.FINAL).order_by()
    if allocation_ids is not None:
        jobs = jobs.filter(allocation_id__in=allocation_ids)
    if job_ids is not None:
        jobs = jobs.filter(pk__in=job_ids)
    rows = (
        with_reservation(jobs)
        .values("allocation_id")
        .annotate(seconds=Sum("reserved_seconds"), cost=Sum("reserved_cost"))
        .values_list("allocation_id", "seconds", "cost")
    )
    return {pk: (Decimal(seconds or 0), Decimal(cost or 0)) for pk, seconds, cost in rows}
