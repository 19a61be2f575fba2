"""Launching: a job or a sweep against an allocation, refused (409) when the allocation is not
active or the estimate exceeds what is left. Submission happens later, in a task, after commit."""
from __future__ import annotations

import secrets
from typing import Any

from django.db import transaction

from allocations.models import Allocation
from allocations.transitions import record_event

from .. import sweepgrid
from ..estimates import Estimate, estimate_run
from ..models import Job, Sweep
from ..runners import runner_for
from ..selectors import remaining_gpu_hours
from .errors import LaunchConflict


def new_token(prefix: str) -> str:
    """A unique scheduler-safe name (job name on Slurm) that makes submission idempotent."""
    return f"portal-{prefix}-{secrets.token_hex(8)}"


def _lock_active(allocation: Allocation) -> Allocation:
    """Lock the allocation row (two launches cannot both spend the same hours) and check it
    can take work."""
    locked = Allocation.objects.select_for_update(of=("self",)).select_related("facility", "node_type").get(
        pk=allocation.pk)
    if locked.status != Allocation.Status.ACTIVE:
        raise LaunchConflict(f"The allocation is {locked.get_status_display().lower()}; jobs can "
                             "only be launched on an active allocation.", status=locked.status)
    return locked


def _check_budget(allocation: Allocation, estimate: Estimate) -> None:
    remaining = remaining_gpu_hours(allocation)
    if estimate.gpu_hours > remaining:
        raise LaunchConflict(
            f"This launch needs an estimated {estimate.gpu_hours} GPU-hours but only {remaining} "
            "are left on the allocation.",
            estimate_gpu_hours=estimate.gpu_hours, remaining_gpu_hours=remaining,
            estimate_source=estimate.source)


def _runner_cost(allocation: Allocation, estimate: Estimate, *, gpus: int,
                 wall_time_minutes: int, runs: int = 1) -> Estimate:
    """Let the facility's runner check what only it knows (a cloud's money budget) and price
    the launch. A runner with `check_launch` raises LaunchConflict (409) to refuse. Runs under
    the allocation row lock, reading only: no backend call happens here."""
    runner = runner_for(allocation.facility)
    check = getattr(runner, "check_launch", None)
    if check is None:
        return estimate
    cost = check(allocation=allocation, gpus=gpus, wall_time_minutes=wall_time_minutes,
                 runs=runs)
    return Estimate(gpu_hours=estimate.gpu_hours, cost=cost, source=estimate.source)


def _enqueue(task_name: str, object_id: int) -> None:
    from .. import tasks

    task = getattr(tasks, task_name)
    transaction.on_commit(lambda: task.delay(object_id))


@transaction.atomic
def job_launch(*, by: Any, allocation: Allocation, gpus: int, wall_time_minutes: int,
               params: dict[str, Any], workload: str = Job.Workload.CTXRAY_TRAIN) -> Job:
    """Create a queued job and enqueue its submission. The caller has checked that `by` is a
    member of the allocation's project. Raises LaunchConflict (409) when the allocation is not
    active or the estimate exceeds the GPU-hours left."""
    allocation = _lock_active(allocation)
    estimate = estimate_run(allocation=allocation, params=params, gpus=gpus,
                            wall_time_minutes=wall_time_minutes)
    _check_budget(allocation, estimate)
    estimate = _runner_cost(allocation, estimate, gpus=gpus, wall_time_minutes=wall_time_minutes)
    job = Job.objects.create(
        allocation=allocation, created_by=by, workload=workload, params=params, gpus=gpus,
        wall_time_minutes=wall_time_minutes, estimate_gpu_hours=estimate.gpu_hours,
        estimate_cost=estimate.cost, estimate_source=estimate.source, token=new_token("job"))
    record_event(job, actor=by, from_state="", to_state=job.state,
                 comment=f"Launched: estimate {estimate.gpu_hours} GPU-hours ({estimate.source}).")
    _enqueue("submit_job", job.pk)
    return job


@transaction.atomic
def sweep_launch(*, by: Any, allocation: Allocation, grid: dict[str, Any], gpus: int,
                 wall_time_minutes: int, params: dict[str, Any], concurrency: int = 4,
                 name: str = "", sort_by: str = "accuracy") -> Sweep:
    """Create a sweep with one queued job per grid cell and enqueue its (single, array)
    submission. The total estimate of all cells is checked against what is left.
    Raises sweepgrid.GridError (400) for a bad grid and LaunchConflict (409)."""
    spec = sweepgrid.validate(grid)
    cells = sweepgrid.expand(spec)
    allocation = _lock_active(allocation)
    per_cell = estimate_run(allocation=allocation, params={**params, **spec.fixed}, gpus=gpus,
                            wall_time_minutes=wall_time_minutes)
    total = Estimate(gpu_hours=per_cell.gpu_hours * len(cells), cost=per_cell.cost * len(cells),
                     source=per_cell.source)
    _check_budget(allocation, total)
    total = _runner_cost(allocation, total, gpus=gpus, wall_time_minutes=wall_time_minutes,
                         runs=len(cells))
    token = new_token("sweep")
    sweep = Sweep.objects.create(
        allocation=allocation, created_by=by, name=name, grid=dict(grid), params=params,
        size=len(cells), gpus=gpus, wall_time_minutes=wall_time_minutes, concurrency=concurrency,
        token=token, estimate_gpu_hours=total.gpu_hours, estimate_cost=total.cost, sort_by=sort_by)
    Job.objects.bulk_create([
        Job(allocation=allocation, sweep=sweep, created_by=by, params={**params, **_cell(c)},
            gpus=gpus, wall_time_minutes=wall_time_minutes, estimate_gpu_hours=per_cell.gpu_hours,
            estimate_cost=per_cell.cost, estimate_source=per_cell.source, token=token,
            array_index=c["index"])
        for c in cells])
    record_event(sweep, actor=by, from_state="", to_state="queued",
                 comment=f"{len(cells)} cells, estimate {total.gpu_hours} GPU-hours.")
    _enqueue("submit_sweep", sweep.pk)
    return sweep


def _cell(cell: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in cell.items() if k != "index"}


