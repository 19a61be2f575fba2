"""Placement: for a job (or a sweep) as it would be launched, every allocation the user may
launch on, eligible or why not, with the predicted run, wait, finish, GPU-hours and cost, and
what would be left; ranked by finish or by cost (launcher/placement/, docs/placement.md). And
the launch that goes to the first-ranked allocation (`"allocation": "auto"`), recording the
ranking on the job.

The checks are the launch's own (launcher/services/launch.py: `_lock_active`, `_backend_price`,
`_check_budget`, `find_dataset` with `dataset_refusal`; launcher/estimates.py: `predict`,
`estimate_run`, `wall_time_for`, `gpus_refusal`), so placement never calls eligible what the
launch then refuses. The scheduler's start estimate comes through the backend seam
(`Capability.START_ESTIMATE`: Slurm's `sbatch --test-only`, the cloud's time to a ready worker);
a facility that knows its slots (`Capability.CAPACITY`) is simulated from its queue; elsewhere,
and where the scheduler gives no estimate, the facility's recent waits predict it. Network
calls (SSH) happen outside any transaction; the per-allocation checks run in a short
transaction of their own (the launch's row lock, database reads only).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from allocations.models import Allocation
from allocations.policy import dataset_refusal
from allocations.selectors import allocation_ledger, member_project_ids
from core.errors import Invalid

from .. import sweepgrid
from ..backends.contract import BackendError, Capability
from ..backends.registry import backend_for
from ..bundles import SYNTHETIC
from ..estimates import (
    CURRENCY,
    Estimate,
    estimate_run,
    gpus_refusal,
    node_type_of,
    predict,
    sweep_first_cell,
    wall_time_for,
)
from ..idempotency import Idempotency
from ..models import Job, Sweep
from ..placement.interval import RunTime, run_time
from ..placement.rank import PREFER, Option, Ranked, rank
from ..placement.record import placement_record
from ..placement.wait import Wait, calibrated, history_wait, slot_wait
from ..placement_selectors import (
    calibration_ratios,
    facility_queue,
    placeable_allocations,
    wait_history,
    wait_pairs,
)
from .datasets import DatasetRefused, find_dataset
from .errors import LaunchConflict
from .launch import _backend_price, _check_budget, _lock_active, job_launch, sweep_launch

__all__ = ["PREFER", "Work", "job_launch_placed", "placements", "sweep_launch_placed"]


@dataclasses.dataclass(frozen=True)
class Work:
    """What is being placed: one job, or a sweep's `grid` (its cells run `concurrency` at
    once), with its parameters, GPUs per run and wall time (None: each allocation's default,
    from its own prediction)."""

    params: Mapping[str, Any]
    gpus: int
    wall_time_minutes: int | None
    grid: Mapping[str, Any] | None = None
    concurrency: int | None = None

    @property
    def runs(self) -> int:
        return 1 if self.grid is None else sweepgrid.validate(dict(self.grid)).size

    def run_params(self) -> dict[str, Any]:
        """What one run trains (a sweep's first cell: the run its wall time is predicted for)."""
        if self.grid is None:
            return dict(self.params)
        return sweep_first_cell(self.grid, self.params)


def placements(
    *, by: Any, work: Work, prefer: str = "finish", project_id: int | None = None
) -> Ranked:
    """Every allocation of the user's projects (or of `project_id`, one of them) with its
    verdict, ranked by `prefer` ("finish" or "cost"). Reads only; may ask schedulers over
    SSH (outside any transaction). Invalid (400 on `project`) for a project the user is not a
    member of, or on `prefer`."""
    if prefer not in PREFER:
        raise Invalid(f"Choose {' or '.join(PREFER)}.", field="prefer")
    if project_id is not None and project_id not in member_project_ids(by):
        raise Invalid("You are not a member of a project with this id.", field="project")
    allocations = list(placeable_allocations(by, project_id=project_id))
    now = timezone.localtime()
    ratios = calibration_ratios()
    options = [_option(allocation, work=work, by=by, ratios=ratios) for allocation in allocations]
    return rank(_labelled(options), prefer=prefer, now=now)


def _labelled(options: list[Option]) -> list[Option]:
    """Facility slugs name the options; one that appears twice gets its allocation's id."""
    seen: dict[str, int] = {}
    for option in options:
        seen[option.facility] = seen.get(option.facility, 0) + 1
    return [
        dataclasses.replace(option, label=f"{option.facility} #{option.allocation_id}")
        if seen[option.facility] > 1
        else option
        for option in options
    ]


def _option(
    allocation: Allocation, *, work: Work, by: Any, ratios: Mapping[str, list[float]]
) -> Option:
    facility = allocation.facility
    option = Option(
        allocation_id=allocation.pk,
        project=allocation.project.code,
        facility=facility.slug,
        facility_name=facility.name,
        kind=facility.kind,
        label=facility.slug,
        currency=CURRENCY,
    )
    params = work.run_params()
    refusals = _data_refusals(allocation, params)
    if not facility.is_active:
        refusals.append(f"{facility.name} is withdrawn from the catalogue (not active)")
    too_many = gpus_refusal(facility, work.gpus)
    if too_many:
        refusals.append(too_many)
    prediction = predict(allocation, params, work.gpus)
    if prediction.fits_memory is False:
        refusals.append(f"it does not fit in memory: {prediction.memory}")
    wall = work.wall_time_minutes or wall_time_for(prediction).minutes
    one = estimate_run(
        allocation=allocation,
        params=params,
        gpus=work.gpus,
        wall_time_minutes=wall,
        prediction=prediction,
    )
    runs = work.runs
    reserve, refusal = _ledger_check(allocation, one, work=work, wall=wall, runs=runs)
    if refusal:
        refusals.append(refusal)
    node = node_type_of(allocation)
    run = run_time(
        predicted_hours=prediction.hours,
        source=prediction.source,
        basis=prediction.basis,
        confidence=prediction.confidence,
        ratios=ratios.get(f"{node.name} ({facility.slug})", []) if node else [],
        wall_time_minutes=wall,
        node_type=node.name if node else "",
    )
    charge_hours, charge_cost = _charge(run, reserve, runs=runs, gpus=work.gpus, wall=wall)
    ledger = allocation_ledger(allocation.pk)
    option = dataclasses.replace(
        option,
        run=run,
        wall_time_minutes=wall,
        runs=runs,
        gpu_hours=charge_hours,
        cost=charge_cost,
        reserve_gpu_hours=reserve.gpu_hours,
        reserve_cost=reserve.cost,
        left_gpu_hours=ledger.gpu_hours_remaining - charge_hours,
        left_budget=None
        if ledger.budget_remaining is None
        else ledger.budget_remaining - charge_cost,
    )
    if refusals:
        return dataclasses.replace(option, refusals=tuple(refusals))
    return _with_wait(option, allocation, work=work, by=by, wall=wall)


def _data_refusals(allocation: Allocation, params: Mapping[str, Any]) -> list[str]:
    """The dataset's own refusals on this allocation: not one of the project's datasets, or a
    data-sensitivity tier the facility does not accept (the launch resolves the path itself)."""
    ref = str(params.get("dataset") or "synthetic-ct")
    if ref in SYNTHETIC:
        return []
    try:
        dataset = find_dataset(allocation=allocation, ref=ref)
    except DatasetRefused as refusal:
        return [str(refusal).rstrip(".")]
    why = dataset_refusal(dataset, allocation.facility)
    return [f"{dataset.name} cannot be used here: {why}"] if why else []


def _ledger_check(
    allocation: Allocation, one: Estimate, *, work: Work, wall: int, runs: int
) -> tuple[Estimate, str]:
    """What the launch would reserve (priced by the backend where it prices work) and the
    launch's own refusal of it, if any: not active, not connected, not enough GPU-hours or
    money left. The launch's row lock, briefly, and database reads only."""
    total = dataclasses.replace(one, gpu_hours=one.gpu_hours * runs, cost=one.cost * runs)
    try:
        with transaction.atomic():
            locked = _lock_active(allocation)
            total = _backend_price(locked, total, gpus=work.gpus, wall_time_minutes=wall, runs=runs)
            _check_budget(locked, _first_release(total, work=work, runs=runs))
    except LaunchConflict as conflict:
        return total, conflict.message
    except Invalid as refusal:  # the cloud cannot price it (no price for that many GPUs)
        return total, str(refusal)
    return total, ""


def _first_release(total: Estimate, *, work: Work, runs: int) -> Estimate:
    """What a launch checks against what is left: everything, or for a staged sweep (early
    stopping, a search) its first `concurrency` cells (as sweep_launch checks it)."""
    if work.grid is None or not sweepgrid.validate(dict(work.grid)).staged:
        return total
    first = min(work.concurrency or runs, runs)
    return dataclasses.replace(
        total, gpu_hours=total.gpu_hours * first / runs, cost=total.cost * first / runs
    )


def _charge(
    run: RunTime, reserve: Estimate, *, runs: int, gpus: int, wall: int
) -> tuple[Decimal, Decimal]:
    """The GPU-hours and money the work would be charged: the predicted run x GPUs x runs,
    at the reservation's price per GPU-hour (the reservation itself when nothing predicts)."""
    hours = Decimal(repr(run.seconds / 3600 * max(gpus, 1) * runs)).quantize(Decimal("0.001"))
    bound = Decimal(wall * max(gpus, 1) * runs) / 60
    rate = reserve.cost / bound if bound else Decimal(0)
    return min(hours, reserve.gpu_hours), (hours * rate).quantize(Decimal("0.01"))


def _with_wait(option: Option, allocation: Allocation, *, work: Work, by: Any, wall: int) -> Option:
    """The option with its wait, rounds and spot interruptions, or refused when the scheduler
    refuses the job as asked (its words)."""
    facility = allocation.facility
    backend = backend_for(facility)
    parallel = min(work.concurrency or 1, option.runs) if work.grid is not None else 1
    rate: float | None = None
    wait: Wait
    if Capability.START_ESTIMATE in backend.capabilities:
        try:
            found = backend.start_estimate(
                allocation=allocation, user_id=by.pk, gpus=work.gpus, wall_time_minutes=wall
            )
        except BackendError as error:
            if error.permanent:
                return dataclasses.replace(option, refusals=(error.message,))
            wait = history_wait(
                wait_history(facility.pk), why=f"the scheduler could not be asked ({error})"
            )
        else:
            rate = found.interruption_rate
            wait = (
                Wait(found.wait_seconds, "backend", found.basis, found.backlog)
                if found.wait_seconds is not None
                else history_wait(wait_history(facility.pk), why=found.basis)
            )
    elif Capability.CAPACITY in backend.capabilities:
        capacity = backend.capacity(facility=facility)
        running, queue = facility_queue(facility.pk)
        need = max(work.gpus, 1)
        wait = slot_wait(
            slots=capacity.slots, in_use=capacity.in_use, need=need, running=running, queue=queue
        )
        parallel = max(1, min(parallel, capacity.slots // need))
    else:
        wait = history_wait(wait_history(facility.pk))
    wait = calibrated(wait, wait_pairs(facility.pk))
    delay = (rate or 0.0) * (wait.seconds or 0.0) * option.runs
    notes: tuple[str, ...] = ()
    if rate:
        notes = (
            f"spot workers: {rate:.0%} interrupted recently, each costs a new worker "
            f"(about {wait.seconds / 60:.0f} min): {delay / 60:.0f} min expected in all",
        )
    return dataclasses.replace(
        option,
        wait=wait,
        waves=math.ceil(option.runs / parallel),
        interruption_rate=rate,
        interruption_delay=delay,
        notes=notes,
    )


def _chosen(ranked: Ranked) -> Option:
    chosen = ranked.chosen
    if chosen is None:
        why = "; ".join(
            f"{o.label}: {o.refusals[0] if o.refusals else 'no answer'}" for o in ranked.options
        )
        raise LaunchConflict(
            "None of your allocations can take this launch"
            + (f" ({why})." if why else ": you have none."),
            placement=placement_record(ranked),
        )
    return chosen


def job_launch_placed(
    *,
    by: Any,
    work: Work,
    prefer: str = "finish",
    project_id: int | None = None,
    idempotency: Idempotency | None = None,
) -> Job:
    """Launch the job on the first-ranked allocation (`placements`) and record the ranking on
    it: the placement (chosen, alternatives, `prefer`, the sentence), the predicted wait and
    finish. LaunchConflict (409, with the placement) when no allocation can take it; otherwise
    the launch's own refusals (job_launch)."""
    ranked = placements(by=by, work=work, prefer=prefer, project_id=project_id)
    chosen = _chosen(ranked)
    job = job_launch(
        by=by,
        allocation=Allocation.objects.select_related("facility", "project", "node_type").get(
            pk=chosen.allocation_id
        ),
        gpus=work.gpus,
        wall_time_minutes=chosen.wall_time_minutes,
        params=dict(work.params),
        idempotency=idempotency,
    )
    _record(Job.objects.filter(pk=job.pk), ranked, chosen)
    job.refresh_from_db()
    return job


def sweep_launch_placed(
    *,
    by: Any,
    work: Work,
    name: str = "",
    prefer: str = "finish",
    project_id: int | None = None,
    idempotency: Idempotency | None = None,
) -> Sweep:
    """Launch the sweep on the first-ranked allocation and record the ranking on its cells
    (each cell: the wait and finish of its round, as many cells at once as the placement
    counted). As job_launch_placed otherwise."""
    assert work.grid is not None
    ranked = placements(by=by, work=work, prefer=prefer, project_id=project_id)
    chosen = _chosen(ranked)
    sweep = sweep_launch(
        by=by,
        allocation=Allocation.objects.select_related("facility", "project", "node_type").get(
            pk=chosen.allocation_id
        ),
        grid=dict(work.grid),
        gpus=work.gpus,
        wall_time_minutes=chosen.wall_time_minutes,
        params=dict(work.params),
        concurrency=work.concurrency or 4,
        name=name,
        idempotency=idempotency,
    )
    _record(Job.objects.filter(sweep=sweep), ranked, chosen)
    return sweep


def _record(jobs: QuerySet[Job], ranked: Ranked, chosen: Option) -> None:
    """Write the placement onto the launched rows (only these three fields: the submission
    may already be moving them). A sweep's cells in round k wait k runs longer; a single job
    finishes when the placement predicted (its spot interruptions counted)."""
    record = placement_record(ranked)
    assert chosen.run is not None and chosen.wait is not None
    finish = chosen.finish_seconds or 0.0
    run, wait = chosen.run.seconds, chosen.wait.seconds
    at_once = max(1, math.ceil(chosen.runs / max(chosen.waves, 1)))
    for wave in range(chosen.waves):
        rows = jobs
        if chosen.runs > 1:
            rows = jobs.filter(
                array_index__gte=wave * at_once, array_index__lt=(wave + 1) * at_once
            )
            finish = wait + (wave + 1) * run
        rows.update(
            placement=record,
            predicted_wait_seconds=round(wait + wave * run),
            predicted_finish_at=ranked.now + dt.timedelta(seconds=finish),
        )
