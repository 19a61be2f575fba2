"""Launching: a job or a sweep against an allocation, refused (409) when the allocation is not
active or the estimate exceeds what is left, with its data settled first. Submission happens
later, in a task, after commit.

A job's data is settled first (`job_data`, launcher/services/datasets.py).
"""

from __future__ import annotations

import dataclasses
import secrets
from decimal import ROUND_UP, Decimal
from typing import Any

from django.db import transaction

from allocations.models import Allocation
from allocations.selectors import allocation_ledger
from allocations.services import ledger_reserve
from allocations.transitions import record_event
from core.figures import hours_text
from core.tasks import enqueue

from .. import params as launch_params
from .. import sweepgrid
from ..backends.contract import Capability
from ..backends.registry import backend_for
from ..estimates import (
    Estimate,
    check_gpus_fit,
    estimate_run,
    estimate_sweep,
    predict,
    sweep_wall_time,
    wall_time_for,
)
from ..idempotency import Idempotency
from ..idempotency import record as idempotency_record
from ..models import IdempotencyKey, Job, Sweep
from ..search.spec import SpecError, check_epochs, expected_fraction
from ..selectors import check_can_act
from .datasets import job_data
from .errors import LaunchConflict
from .sweeps import sweep_stage


def new_token(prefix: str) -> str:
    """A unique scheduler-safe name (job name on Slurm) that makes submission idempotent."""
    return f"portal-{prefix}-{secrets.token_hex(8)}"


def _lock_active(allocation: Allocation) -> Allocation:
    """Lock the allocation row (two launches cannot both spend the same hours) and check it
    can take work."""
    locked = (
        Allocation.objects.select_for_update(of=("self",))
        .select_related("facility", "node_type")
        .get(pk=allocation.pk)
    )
    if locked.status != Allocation.Status.ACTIVE:
        raise LaunchConflict(
            f"The allocation is {locked.get_status_display().lower()}; jobs can "
            "only be launched on an active allocation.",
            status=locked.status,
        )
    if Capability.SUBMIT not in backend_for(locked.facility).capabilities:
        raise LaunchConflict(
            f"{locked.facility.name} is not connected to the portal: jobs "
            "cannot be launched on it from here.",
            status=locked.status,
        )
    return locked


def _check_budget(allocation: Allocation, estimate: Estimate) -> None:
    """Refuse (409) a launch whose estimate does not fit what is left: granted less charged
    less the reservations of unfinished work (launcher/selectors.py, `job_reservations`), in
    GPU-hours and, where the allocation has a money budget, in money. Called with the
    allocation row locked, so two launches are checked one after the other and never spend the
    same hours."""
    ledger = allocation_ledger(allocation.pk)
    remaining = ledger.gpu_hours_remaining
    if estimate.gpu_hours > remaining:
        unit = allocation.facility.unit  # CPU-hours on a facility without GPUs
        raise LaunchConflict(
            f"This launch needs an estimated {hours_text(estimate.gpu_hours)} {unit.hours} but only "
            f"{hours_text(remaining)} are left on the allocation ({hours_text(ledger.gpu_hours_reserved)} "
            f"reserved by unfinished work). Estimate ({estimate.source}): {estimate.basis}",
            estimate_gpu_hours=estimate.gpu_hours,
            remaining_gpu_hours=remaining,
            reserved_gpu_hours=ledger.gpu_hours_reserved,
            estimate_source=estimate.source,
            estimate_basis=estimate.basis,
        )
    left = ledger.budget_remaining
    if left is not None and estimate.cost > left:
        raise LaunchConflict(
            f"This launch would cost an estimated {estimate.cost} but only {left} of the "
            f"budget is left ({ledger.cost_reserved} reserved by unfinished work). "
            f"Estimate ({estimate.source}): {estimate.basis}",
            estimate_cost=estimate.cost,
            remaining_budget=left,
            reserved_cost=ledger.cost_reserved,
            estimate_source=estimate.source,
            estimate_basis=estimate.basis,
        )


def _backend_price(
    allocation: Allocation, estimate: Estimate, *, gpus: int, wall_time_minutes: int, runs: int = 1
) -> Estimate:
    """The launch priced by the facility's backend where it prices work in money (the cloud's
    `price_launch`: the catalogue's price x the instance time); `_check_budget` then refuses
    it (409) when the money is not left. Runs under the allocation row lock, reading only: no
    network call happens here."""
    backend = backend_for(allocation.facility)
    if Capability.PRICE_LAUNCH not in backend.capabilities:
        return estimate
    cost = backend.price_launch(
        allocation=allocation, gpus=gpus, wall_time_minutes=wall_time_minutes, runs=runs
    )
    return dataclasses.replace(estimate, cost=cost)


def job_launch(
    *,
    by: Any,
    allocation: Allocation,
    gpus: int,
    wall_time_minutes: int | None,
    params: dict[str, Any],
    workload: str = Job.Workload.CTXRAY_TRAIN,
    idempotency: Idempotency | None = None,
) -> Job:
    """Create a queued job and enqueue its submission. Members of the allocation's project and
    staff may (NotVisible, 404, for those who may not see it; Forbidden, 403, for
    reviewers). The job's dataset is a synthetic set or one of the project's datasets,
    resolved and confined first (DatasetRefused, 400; this may ask the cluster, so it happens
    before the transaction). Raises GpusRefused (400 on `gpus`) for more GPUs than the
    facility ever runs at once, ParamsError (400, per field) for parameters that cannot
    run together, LaunchConflict (409) when the allocation is not active or
    the estimate exceeds the GPU-hours left. With `idempotency`, the key is recorded with the
    job in its transaction (launcher/idempotency.py; KeyRaced if another request beat it).
    Without `wall_time_minutes`, the job gets the predicted run time with its margin
    (launcher/estimates.py, `wall_time_for`), from the one prediction its estimate also shows."""
    check_can_act(by, allocation, what="launch jobs on its allocations")
    check_gpus_fit(allocation.facility, gpus)
    launch_params.check_job(params, gpus=gpus)
    params = job_data(allocation=allocation, params=params)
    return _job_create(
        by=by,
        allocation=allocation,
        gpus=gpus,
        wall_time_minutes=wall_time_minutes,
        params=params,
        workload=workload,
        idempotency=idempotency,
    )


@transaction.atomic
def _job_create(
    *,
    by: Any,
    allocation: Allocation,
    gpus: int,
    wall_time_minutes: int | None,
    params: dict[str, Any],
    workload: str,
    idempotency: Idempotency | None,
) -> Job:
    allocation = _lock_active(allocation)
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
    estimate = _backend_price(allocation, estimate, gpus=gpus, wall_time_minutes=wall_time_minutes)
    _check_budget(allocation, estimate)
    job = Job.objects.create(
        allocation=allocation,
        created_by=by,
        workload=workload,
        params=params,
        gpus=gpus,
        wall_time_minutes=wall_time_minutes,
        estimate_gpu_hours=estimate.gpu_hours,
        estimate_cost=estimate.cost,
        estimate_source=estimate.source,
        token=new_token("job"),
        **estimate.job_fields(),
    )
    idempotency_record(idempotency, kind=IdempotencyKey.Kind.JOB, object_id=job.pk)
    ledger_reserve(allocation_id=allocation.pk, job_ids=[job.pk])
    record_event(
        job,
        actor=by,
        from_state="",
        to_state=job.state,
        comment=f"Launched: estimate {estimate.gpu_hours} GPU-hours ({estimate.source}).",
    )
    enqueue("launcher.submit_job", job.pk)
    return job


def sweep_launch(
    *,
    by: Any,
    allocation: Allocation,
    grid: dict[str, Any],
    gpus: int,
    wall_time_minutes: int | None,
    params: dict[str, Any],
    concurrency: int = 4,
    name: str = "",
    sort_by: str = "accuracy",
    idempotency: Idempotency | None = None,
) -> Sweep:
    """Create a sweep with one queued job per grid cell and enqueue its (single, array)
    submission. The total estimate of all cells is checked against what is left.
    The same permission and dataset rules as job_launch. Raises sweepgrid.GridError or ParamsError
    (400) for a bad grid or parameters its cells cannot run with, DatasetRefused (400) and
    LaunchConflict (409). `idempotency` as for job_launch. Without `wall_time_minutes`, every
    cell gets the first cell's predicted run time with its margin (`sweep_wall_time`)."""
    check_can_act(by, allocation, what="launch sweeps on its allocations")
    check_gpus_fit(allocation.facility, gpus)
    spec = sweepgrid.validate(grid)
    launch_params.check_sweep(params, spec, gpus=gpus)
    try:
        check_epochs(spec.early_stopping, int({**params, **spec.fixed}.get("epochs", 50)))
    except SpecError as error:
        raise sweepgrid.GridError(str(error)) from None
    params = job_data(allocation=allocation, params=params)
    if wall_time_minutes is None:
        wall_time_minutes = sweep_wall_time(
            allocation=allocation, grid=grid, params=params, gpus=gpus
        )
    return _sweep_create(
        by=by,
        allocation=allocation,
        grid=grid,
        gpus=gpus,
        wall_time_minutes=wall_time_minutes,
        params=params,
        concurrency=concurrency,
        name=name,
        sort_by=sort_by,
        idempotency=idempotency,
    )


@transaction.atomic
def _sweep_create(
    *,
    by: Any,
    allocation: Allocation,
    grid: dict[str, Any],
    gpus: int,
    wall_time_minutes: int,
    params: dict[str, Any],
    concurrency: int,
    name: str,
    sort_by: str,
    idempotency: Idempotency | None,
) -> Sweep:
    spec = sweepgrid.validate(grid)
    cells = sweepgrid.expand(spec)
    allocation = _lock_active(allocation)
    estimate = estimate_sweep(
        allocation=allocation,
        params=params,
        fixed=spec.fixed,
        cells=spec.size,
        gpus=gpus,
        wall_time_minutes=wall_time_minutes,
    )
    per_cell, total = estimate.per_cell, estimate.total
    total = _backend_price(
        allocation, total, gpus=gpus, wall_time_minutes=wall_time_minutes, runs=spec.size
    )
    cell_cost = (total.cost / spec.size).quantize(Decimal("0.0001"), rounding=ROUND_UP)
    if spec.staged:
        # Only what runs at once is reserved (each released cell, its worst case): the first
        # release must fit; later ones are checked as they happen (services/sweeps.py).
        first = min(concurrency, spec.size)
        _check_budget(
            allocation,
            dataclasses.replace(
                per_cell, gpu_hours=per_cell.gpu_hours * first, cost=cell_cost * first
            ),
        )
    else:
        _check_budget(allocation, total)
    token = new_token("sweep")
    epochs = int({**params, **spec.fixed}.get("epochs", 50))
    expected = (
        total.gpu_hours * Decimal(str(expected_fraction(spec.early_stopping, epochs)))
    ).quantize(Decimal("0.001"), rounding=ROUND_UP)
    sweep = Sweep.objects.create(
        allocation=allocation,
        created_by=by,
        name=name,
        grid=dict(grid),
        params=params,
        size=spec.size,
        gpus=gpus,
        wall_time_minutes=wall_time_minutes,
        concurrency=concurrency,
        token=token,
        estimate_gpu_hours=total.gpu_hours,
        estimate_cost=total.cost,
        sort_by=sort_by,
        staged=spec.staged,
        cell_estimate_gpu_hours=per_cell.gpu_hours,
        cell_estimate_cost=cell_cost,
        expected_gpu_hours=expected if spec.staged else None,
    )
    idempotency_record(idempotency, kind=IdempotencyKey.Kind.SWEEP, object_id=sweep.pk)
    held = spec.staged  # a staged sweep's cells reserve nothing until they are released
    cells_created = Job.objects.bulk_create(
        [
            Job(
                allocation=allocation,
                sweep=sweep,
                created_by=by,
                params={**params, **_cell(c)},
                gpus=gpus,
                wall_time_minutes=wall_time_minutes,
                estimate_gpu_hours=0 if held else per_cell.gpu_hours,
                estimate_cost=0 if held else cell_cost,
                estimate_source=per_cell.source,
                token=token,
                array_index=c["index"],
                held=held,
                **per_cell.job_fields(),
            )
            for c in cells
        ]
    )
    how = (
        f"{spec.size} cells, worst case {total.gpu_hours} GPU-hours"
        + (f", expected {expected} ({_expected_basis(spec)})" if spec.staged else "")
        + "."
    )
    record_event(sweep, actor=by, from_state="", to_state="queued", comment=how)
    if spec.staged:
        template = {"estimate_source": per_cell.source, **per_cell.job_fields()}
        sweep_stage(sweep=sweep, spec=spec, cells=cells_created, template=template)
        return sweep
    ledger_reserve(allocation_id=allocation.pk, job_ids=[job.pk for job in cells_created])
    enqueue("launcher.submit_sweep", sweep.pk)
    return sweep


def _expected_basis(spec: sweepgrid.GridSpec) -> str:
    stopping = spec.early_stopping
    if stopping is None:
        return "every cell to its last epoch"
    return (
        f"the rung schedule: 1/{stopping.eta} of the configurations go on at each rung, from "
        f"epoch {stopping.min_epochs}"
    )


def _cell(cell: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in cell.items() if k != "index"}
