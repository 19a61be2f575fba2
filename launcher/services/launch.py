"""Launching: a job or a sweep against an allocation, refused (409) when the allocation is not
active or the estimate exceeds what is left, with its data settled first. Submission happens
later, in a task, after commit.

A job's data (`job_data`, below): a synthetic set (the trainer's generator), or a dataset
registered by the job's own project, resolved and confined on the side that sees the files.
Never a raw path.

A project's folder on a facility is `<storage_root>/<project code>` (`storage_root` in the
facility's backend settings; the local backend defaults to `var/project-data`). A dataset's
location is relative to that folder. At every launch, before any row is written:

1. the dataset is looked up in the allocation's project, by id or by name (another project's
   dataset is "not found", exactly like one that does not exist);
2. its data-sensitivity tier must be one the facility accepts;
3. its location must pass the policy's rules again (relative, no '..': a row could have been
   written before the rules, or by hand);
4. the facility's backend (the `data_paths` capability of launcher/backends/registry.py)
   resolves the project folder and the dataset with every symlink followed (os.path.realpath
   locally, `realpath -e` over SSH on Slurm, as an argument list) and refuses a dataset that
   is missing or lands outside the project folder.

Each refusal is a `DatasetRefused`: HTTP 400 on `params.dataset`, the form's `dataset` field,
and nothing launched. The resolved absolute path travels in the job's params as `data_path`
(written by the portal, never taken from the user) and reaches the trainer as `--data`; the
resolved project folder travels as `data_root` and reaches it as `--data-root`: the trainer
resolves `--data` again on the node when it starts and refuses to read it if it now lies
outside that folder (a symlink swapped in after the launch).

The datasets a notebook session may read pass the same checks
(launcher/notebooks/selectors.py, `notebook_datasets`).
"""
from __future__ import annotations

import dataclasses
import secrets
from collections.abc import Mapping
from decimal import ROUND_UP, Decimal
from typing import Any

from django.db import transaction

from allocations.bounds import as_id
from allocations.figures import hours_text
from allocations.models import Allocation, Dataset
from allocations.policy import dataset_refusal
from allocations.selectors import allocation_ledger
from allocations.services import ledger_reserve
from allocations.transitions import enqueue, record_event

from .. import params as launch_params, sweepgrid
from ..selectors import check_can_act
from ..estimates import Estimate, estimate_run, estimate_sweep, gpus_refusal
from ..models import Job, Sweep
from ..backends.base import NO_STORAGE, BackendError, PathRefused
from ..backends.registry import Capability, backend_for, supports
from ..bundles import SYNTHETIC
from .errors import GpusRefused, LaunchConflict, LaunchRefused


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
    if Capability.SUBMIT not in backend_for(locked.facility).capabilities:
        raise LaunchConflict(f"{locked.facility.name} is not connected to the portal: jobs "
                             "cannot be launched on it from here.", status=locked.status)
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
        raise LaunchConflict(
            f"This launch needs an estimated {estimate.gpu_hours} GPU-hours but only "
            f"{hours_text(remaining)} are left on the allocation ({hours_text(ledger.gpu_hours_reserved)} "
            f"reserved by unfinished work). Estimate ({estimate.source}): {estimate.basis}",
            estimate_gpu_hours=estimate.gpu_hours, remaining_gpu_hours=remaining,
            reserved_gpu_hours=ledger.gpu_hours_reserved, estimate_source=estimate.source,
            estimate_basis=estimate.basis)
    left = ledger.budget_remaining
    if left is not None and estimate.cost > left:
        raise LaunchConflict(
            f"This launch would cost an estimated {estimate.cost} but only {left} of the "
            f"budget is left ({ledger.cost_reserved} reserved by unfinished work). "
            f"Estimate ({estimate.source}): {estimate.basis}",
            estimate_cost=estimate.cost, remaining_budget=left,
            reserved_cost=ledger.cost_reserved, estimate_source=estimate.source,
            estimate_basis=estimate.basis)


def _backend_price(allocation: Allocation, estimate: Estimate, *, gpus: int,
                 wall_time_minutes: int, runs: int = 1) -> Estimate:
    """The launch priced by the facility's backend where it prices work in money (the cloud's
    `price_launch`: the catalogue's price x the instance time); `_check_budget` then refuses
    it (409) when the money is not left. Runs under the allocation row lock, reading only: no
    network call happens here."""
    backend = backend_for(allocation.facility)
    if Capability.PRICE_LAUNCH not in backend.capabilities:
        return estimate
    cost = backend.price_launch(allocation=allocation, gpus=gpus,
                                wall_time_minutes=wall_time_minutes, runs=runs)
    return dataclasses.replace(estimate, cost=cost)


def _check_fits(allocation: Allocation, gpus: int) -> None:
    """Refuse (400 on `gpus`) a run needing more GPUs than the facility's backend can ever run
    at once (the local backend's slots); a backend that does not know its slots is not asked."""
    refusal = gpus_refusal(allocation.facility, gpus)
    if refusal:
        raise GpusRefused(refusal)


def job_launch(*, by: Any, allocation: Allocation, gpus: int, wall_time_minutes: int,
               params: dict[str, Any], workload: str = Job.Workload.CTXRAY_TRAIN) -> Job:
    """Create a queued job and enqueue its submission. Members of the allocation's project and
    staff may (NotVisible, 404, for those who may not see it; PermissionDenied, 403, for
    reviewers). The job's dataset is a synthetic set or one of the project's datasets,
    resolved and confined first (DatasetRefused, 400; this may ask the cluster, so it happens
    before the transaction). Raises GpusRefused (400 on `gpus`) for more GPUs than the
    facility ever runs at once, ParamsError (400, per field) for parameters that cannot
    run together, LaunchConflict (409) when the allocation is not active or
    the estimate exceeds the GPU-hours left."""
    check_can_act(by, allocation, what="launch jobs on its allocations")
    _check_fits(allocation, gpus)
    launch_params.check_job(params, gpus=gpus)
    params = job_data(allocation=allocation, params=params)
    return _job_create(by=by, allocation=allocation, gpus=gpus,
                       wall_time_minutes=wall_time_minutes, params=params, workload=workload)


@transaction.atomic
def _job_create(*, by: Any, allocation: Allocation, gpus: int, wall_time_minutes: int,
                params: dict[str, Any], workload: str) -> Job:
    allocation = _lock_active(allocation)
    estimate = estimate_run(allocation=allocation, params=params, gpus=gpus,
                            wall_time_minutes=wall_time_minutes)
    estimate = _backend_price(allocation, estimate, gpus=gpus, wall_time_minutes=wall_time_minutes)
    _check_budget(allocation, estimate)
    job = Job.objects.create(
        allocation=allocation, created_by=by, workload=workload, params=params, gpus=gpus,
        wall_time_minutes=wall_time_minutes, estimate_gpu_hours=estimate.gpu_hours,
        estimate_cost=estimate.cost, estimate_source=estimate.source, token=new_token("job"),
        **estimate.job_fields())
    ledger_reserve(allocation_id=allocation.pk, job_ids=[job.pk])
    record_event(job, actor=by, from_state="", to_state=job.state,
                 comment=f"Launched: estimate {estimate.gpu_hours} GPU-hours ({estimate.source}).")
    enqueue("launcher.submit_job", job.pk)
    return job


def sweep_launch(*, by: Any, allocation: Allocation, grid: dict[str, Any], gpus: int,
                 wall_time_minutes: int, params: dict[str, Any], concurrency: int = 4,
                 name: str = "", sort_by: str = "accuracy") -> Sweep:
    """Create a sweep with one queued job per grid cell and enqueue its (single, array)
    submission. The total estimate of all cells is checked against what is left.
    The same permission and dataset rules as job_launch. Raises sweepgrid.GridError or ParamsError
    (400) for a bad grid or parameters its cells cannot run with, DatasetRefused (400) and
    LaunchConflict (409)."""
    check_can_act(by, allocation, what="launch sweeps on its allocations")
    _check_fits(allocation, gpus)
    launch_params.check_sweep(params, sweepgrid.validate(grid), gpus=gpus)
    params = job_data(allocation=allocation, params=params)
    return _sweep_create(by=by, allocation=allocation, grid=grid, gpus=gpus,
                         wall_time_minutes=wall_time_minutes, params=params,
                         concurrency=concurrency, name=name, sort_by=sort_by)


@transaction.atomic
def _sweep_create(*, by: Any, allocation: Allocation, grid: dict[str, Any], gpus: int,
                  wall_time_minutes: int, params: dict[str, Any], concurrency: int, name: str,
                  sort_by: str) -> Sweep:
    spec = sweepgrid.validate(grid)
    cells = sweepgrid.expand(spec)
    allocation = _lock_active(allocation)
    estimate = estimate_sweep(allocation=allocation, params=params, fixed=spec.fixed,
                              cells=len(cells), gpus=gpus, wall_time_minutes=wall_time_minutes)
    per_cell, total = estimate.per_cell, estimate.total
    total = _backend_price(allocation, total, gpus=gpus, wall_time_minutes=wall_time_minutes,
                         runs=len(cells))
    _check_budget(allocation, total)
    cell_cost = (total.cost / len(cells)).quantize(Decimal("0.0001"), rounding=ROUND_UP)
    token = new_token("sweep")
    sweep = Sweep.objects.create(
        allocation=allocation, created_by=by, name=name, grid=dict(grid), params=params,
        size=len(cells), gpus=gpus, wall_time_minutes=wall_time_minutes, concurrency=concurrency,
        token=token, estimate_gpu_hours=total.gpu_hours, estimate_cost=total.cost, sort_by=sort_by)
    cells_created = Job.objects.bulk_create([
        Job(allocation=allocation, sweep=sweep, created_by=by, params={**params, **_cell(c)},
            gpus=gpus, wall_time_minutes=wall_time_minutes, estimate_gpu_hours=per_cell.gpu_hours,
            estimate_cost=cell_cost, estimate_source=per_cell.source, token=token,
            array_index=c["index"], **per_cell.job_fields())
        for c in cells])
    ledger_reserve(allocation_id=allocation.pk, job_ids=[job.pk for job in cells_created])
    record_event(sweep, actor=by, from_state="", to_state="queued",
                 comment=f"{len(cells)} cells, estimate {total.gpu_hours} GPU-hours.")
    enqueue("launcher.submit_sweep", sweep.pk)
    return sweep


def _cell(cell: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in cell.items() if k != "index"}


# A job's data: a synthetic set, or the project's dataset resolved and confined.

class DatasetRefused(LaunchRefused):
    """The job's dataset cannot be used (HTTP 400 on params.dataset)."""

    field = "params.dataset"


def find_dataset(*, allocation: Allocation, ref: str) -> Dataset:
    """The allocation's project's dataset named `ref` (or with id `ref`)."""
    datasets = Dataset.objects.filter(project_id=allocation.project_id)
    found = (datasets.filter(pk=number).first() if (number := as_id(ref)) is not None else None) or \
        datasets.filter(name=ref).first()
    if found is None:
        raise DatasetRefused(f"The project has no dataset {ref!r}: register it on the project's "
                             f"datasets page, or use {' or '.join(SYNTHETIC)}.")
    return found


def job_data(*, allocation: Allocation, params: Mapping[str, Any]) -> dict[str, Any]:
    """The job's params with its data settled: unchanged for a synthetic set; for a dataset,
    `dataset` (its name), `dataset_id` and `data_path` (resolved, confined). May call the
    backend (SSH): call it outside any transaction. Raises DatasetRefused (400), or
    LaunchConflict (409) when the cluster cannot be reached to check."""
    params = {k: v for k, v in params.items()
              if k not in ("data_path", "data_root", "dataset_id")}
    ref = str(params.get("dataset") or "synthetic-ct")
    if ref in SYNTHETIC:
        return params
    dataset = find_dataset(allocation=allocation, ref=ref)
    facility = allocation.facility
    why = dataset_refusal(dataset, facility)
    if why:
        raise DatasetRefused(f"{dataset.name} cannot be used here: {why}.")
    no_storage = DatasetRefused(f"{facility.name} {NO_STORAGE}; use {' or '.join(SYNTHETIC)}.")
    if not supports(facility, Capability.DATA_PATHS):
        raise no_storage
    backend = backend_for(facility)
    try:
        real = backend.resolve_data_path(
            facility=facility, project_code=allocation.project.code, location=dataset.location)
        # The project's folder itself ("." resolves to it), which the job checks again on
        # the node when it starts (`data_root`).
        root = backend.resolve_data_path(
            facility=facility, project_code=allocation.project.code, location=".")
    except PathRefused as refusal:
        if refusal.message == NO_STORAGE:
            raise no_storage from None
        raise DatasetRefused(f"{dataset.name} ({dataset.location}) cannot be used: "
                             f"{refusal.message}.") from None
    except BackendError as error:
        raise LaunchConflict(f"Could not check {dataset.name} on {facility.name}: "
                             f"{error.message}. Try again.") from None
    return {**params, "dataset": dataset.name, "dataset_id": dataset.pk, "data_path": real,
            "data_root": root}
