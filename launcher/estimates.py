"""What a launch reserves, and the prediction beside it.

A launch reserves the most it may use: its wall-time limit x GPUs (x runs), which the backend
enforces (Slurm `--time`, the local hard stop, the cloud agent's deadline), as Slurm itself
reserves against GrpTRESMins when it decides whether a job may start. The reservation shrinks
as charges arrive (launcher/selectors.py, `job_reservations`) and is released when the job
ends, so only what a run uses stays charged. The recommender's predicted run time
(`benchmarks.estimates.job_prediction`) no longer sets the reservation; it sets the default
wall time (`default_wall_time`: the prediction x P.WALL_TIME_MARGIN, at least
P.WALL_TIME_FLOOR_MINUTES) and is shown beside it.
`source` says what the prediction rests on:
  measured     predicted from a benchmark result for this model on this node type
  recommender  predicted from other results (same chip, other models, or the roofline)
  wall-time    no usable prediction, or one longer than the wall time
and `basis` says so in a sentence that the 409 refusal and the job page repeat.

Also here, how many runs a facility really runs at once (`capacity_note`, `gpus_refusal`), said
before a launch and on the sweep page: a sweep's `concurrency` is an upper bound, the facility's
free slots decide (issue 22: cells ran one at a time under "at most 2 at once", and an API job
waited minutes for a slot with nothing saying so beforehand). A backend that knows its slots
declares `capacity` in the registry and is asked; elsewhere the scheduler decides and the
sentence says so.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import ROUND_UP, Decimal
from typing import Any

from django.db import transaction

from allocations.models import Allocation, Facility, NodeType
from allocations.units import GPU, Unit
from benchmarks.estimates import JobPrediction, job_prediction
from core.figures import rounded, run_minutes

from . import params as P
from . import sweepgrid
from .backends.contract import Capability, Capacity
from .backends.registry import backend_for
from .refusals import GpusRefused

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Estimate:
    gpu_hours: Decimal
    cost: Decimal
    source: str  # "measured", "recommender" or "wall-time"
    basis: str = ""
    confidence: str = ""
    neighbour: str = ""
    predicted_hours: Decimal | None = None  # one run's predicted wall hours, unclamped
    predicted_images_per_s: float | None = None

    def job_fields(self) -> dict[str, Any]:
        """The prediction's fields as stored on each Job (the estimate fields are set apart)."""
        return {
            "estimate_basis": self.basis[:1000],
            "estimate_confidence": self.confidence,
            "estimate_neighbour": self.neighbour[:300],
            "predicted_hours": self.predicted_hours,
            "predicted_images_per_s": self.predicted_images_per_s,
        }


def node_type_of(allocation: Allocation) -> NodeType | None:
    """The node type a prediction is for: the allocation's own, or its facility's only one (a
    facility with one node type, like `local`, needs no choice)."""
    if allocation.node_type_id is not None:
        return allocation.node_type
    only = list(NodeType.objects.filter(facility_id=allocation.facility_id)[:2])
    return only[0] if len(only) == 1 else None


def predict(allocation: Allocation, params: Mapping[str, Any], gpus: int) -> JobPrediction:
    """The recommender's prediction of one run (a fallback that says why when it fails)."""
    try:
        # A savepoint: a failed query in here must not poison the launch's transaction.
        with transaction.atomic():
            return job_prediction(node_type=node_type_of(allocation), params=params, gpus=gpus)
    except Exception as error:  # a broken prediction must not block launching: fall back
        log.exception("prediction failed for allocation %s", allocation.pk)
        return JobPrediction("wall-time", f"the recommender failed ({type(error).__name__})")


def estimate_run(
    *,
    allocation: Allocation,
    params: Mapping[str, Any],
    gpus: int,
    wall_time_minutes: int,
    runs: int = 1,
    prediction: JobPrediction | None = None,
) -> Estimate:
    """What `runs` runs of this job reserve on the allocation's facility: the wall-time limit
    x GPUs each (GPU-hours, and money at the facility's GPU-hour rate; a cloud backend prices
    the same limit itself), with the recommender's prediction and its basis beside it
    (`prediction`, when the caller has already made it for these params, else made here)."""
    bound = Decimal(gpus * wall_time_minutes) / 60
    found = prediction if prediction is not None else predict(allocation, params, gpus)
    predicted = None if found.gpu_hours is None else Decimal(repr(found.gpu_hours))
    unit = allocation.facility.unit  # GPUs, or CPUs on a facility without GPUs
    limit = (
        f"Reserved: the limit, {wall_time_minutes} min wall time x {gpus} {unit.of(gpus)}; the "
        "run is stopped there and only what it uses is charged."
    )
    # A prediction has both figures (benchmarks/estimates.py: job_prediction).
    if predicted is not None and found.hours is not None and predicted <= bound:
        source = found.source
        basis = f"{limit} Predicted {run_minutes(found.hours)} per run from {found.basis}."
    elif predicted is not None and found.hours is not None:
        source = "wall-time"
        basis = (
            f"{limit} The recommender predicts {found.hours:.2f} h per run ({found.basis}), "
            f"more than the {wall_time_minutes}-minute wall time: the run will be stopped "
            "there."
        )
    else:
        source = "wall-time"
        basis = f"{limit} No prediction: {found.basis}."
    one = bound
    hours = (one * runs).quantize(Decimal("0.001"), rounding=ROUND_UP)
    cost = (hours * allocation.facility.gpu_hour_rate).quantize(Decimal("0.0001"))
    run_hours = (
        None
        if found.hours is None
        else Decimal(repr(found.hours)).quantize(Decimal("0.000001"), rounding=ROUND_UP)
    )
    return Estimate(
        gpu_hours=hours,
        cost=cost,
        source=source,
        basis=basis,
        confidence=found.confidence,
        neighbour=found.neighbour,
        predicted_hours=run_hours,
        predicted_images_per_s=found.images_per_s,
    )


@dataclass(frozen=True)
class WallTimeDefault:
    """The wall time a launch gets when it names none, and why (the form shows the sentence)."""

    minutes: int
    basis: str


def default_wall_time(
    *, allocation: Allocation | None, params: Mapping[str, Any], gpus: int
) -> WallTimeDefault:
    """The predicted run time x P.WALL_TIME_MARGIN, rounded up to whole minutes, at least
    P.WALL_TIME_FLOOR_MINUTES and within the wall-time bounds; P.DEFAULT_WALL_TIME_MINUTES when
    nothing can be predicted."""
    return wall_time_for(predict(allocation, params, gpus) if allocation is not None else None)


def wall_time_for(found: JobPrediction | None) -> WallTimeDefault:
    """`default_wall_time` from a prediction already made (None: no allocation to predict on)."""
    if found is None or found.hours is None:
        why = found.basis if found is not None else "no allocation"
        return WallTimeDefault(
            P.DEFAULT_WALL_TIME_MINUTES,
            f"Default {P.DEFAULT_WALL_TIME_MINUTES} min: no prediction ({why}).",
        )
    predicted = found.hours * 60
    minutes = max(P.WALL_TIME_FLOOR_MINUTES, math.ceil(predicted * P.WALL_TIME_MARGIN))
    minutes = min(max(minutes, P.WALL_TIME_MINUTES[0]), P.WALL_TIME_MINUTES[1])
    return WallTimeDefault(
        minutes,
        (
            f"{minutes} min: {P.WALL_TIME_MARGIN}x the predicted {run_minutes(found.hours)} per "
            f"run, at least {P.WALL_TIME_FLOOR_MINUTES} min. The run is stopped there; only what "
            "it uses is charged."
        ),
    )


def sweep_first_cell(grid: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any]:
    """What the first run of a sweep trains: the run a sweep's default wall time is predicted
    for (`default_wall_time`; every cell gets the same limit)."""
    grid = sweepgrid.PRESETS.get(grid["preset"], grid) if "preset" in grid else grid
    models = grid.get("models") or [P.DEFAULT_JOB["model"]]
    return {
        **P.DEFAULT_SWEEP_PARAMS,
        **params,
        **(grid.get("fixed") or {}),
        "model": models[0],
        "folds": grid.get("folds", 1),
    }


def sweep_wall_time(
    *, allocation: Allocation, grid: Mapping[str, Any], params: Mapping[str, Any], gpus: int
) -> int:
    """The wall time of each cell of a sweep that names none: the first cell's predicted run
    time with its margin (`default_wall_time`)."""
    first = sweep_first_cell(grid, params)
    return default_wall_time(allocation=allocation, params=first, gpus=gpus).minutes


#: Money throughout the portal is US dollars (benchmarks/catalogue_hardware.py; cloud prices
#: are USD).
CURRENCY = "USD"


@dataclass(frozen=True)
class SweepEstimate:
    """A sweep's total: every cell costs the same estimate, so total = cells x per cell."""

    cells: int
    per_cell: Estimate
    total: Estimate

    def basis(self, *, gpus: int, wall_time_minutes: int, unit: Unit = GPU) -> str:
        """The reservation's basis in words, as the sweep form and the API show it, in the
        facility's `unit` (CPUs and CPU-hours on a facility without GPUs), its hours by the
        pages' one rule (core/figures.py)."""
        why = f"{gpus} {unit.of(gpus)} x {wall_time_minutes} min wall time"
        return (
            f"{self.cells} cells x {rounded(self.per_cell.gpu_hours)} {unit.hours} per cell "
            f"({why}, the limit each cell is stopped at)"
        )


def estimate_sweep(
    *,
    allocation: Allocation,
    params: Mapping[str, Any],
    fixed: Mapping[str, Any],
    cells: int,
    gpus: int,
    wall_time_minutes: int,
) -> SweepEstimate:
    """Per-cell and total estimate of a sweep of `cells` runs (sweep_launch checks the total)."""
    one = estimate_run(
        allocation=allocation,
        params={**params, **fixed},
        gpus=gpus,
        wall_time_minutes=wall_time_minutes,
    )
    total = dataclasses.replace(one, gpu_hours=one.gpu_hours * cells, cost=one.cost * cells)
    return SweepEstimate(cells=cells, per_cell=one, total=total)


def _capacity(facility: Facility) -> Capacity | None:
    """The facility's slots and how many are in use, or None when its backend does not know
    them (a scheduler decides)."""
    backend = backend_for(facility)
    if Capability.CAPACITY not in backend.capabilities:
        return None
    return backend.capacity(facility=facility)


def notebook_slots_refusal(facility: Facility, gpus: int) -> str | None:
    """Why a notebook of `gpus` cannot open on `facility` now, or None: where the backend knows
    its slots (the local backend) and fewer than `gpus` are free. A job waits for a slot; a
    notebook is interactive and would fail at the hub, so it is refused before anything is
    made (the allocation page says so above its button)."""
    capacity = _capacity(facility)
    if capacity is None or capacity.slots - capacity.in_use >= gpus:
        return None
    unit, slots = facility.unit, capacity.slots
    return (
        f"{facility.name} runs {slots} {unit.of(slots)} at a time and {capacity.in_use} "
        f"{'is' if capacity.in_use == 1 else 'are'} in use by running jobs or notebooks now: a "
        f"notebook needs {gpus} free {unit.of(gpus)} when it opens (it does not wait in a queue "
        "as a job does). Open it when a run ends."
    )


def capacity_note(facility: Facility, *, concurrency: int | None = None) -> str:
    """One sentence: the facility's slots, how many are in use now, and what that means."""
    capacity = _capacity(facility)
    if capacity is None:
        return (
            f"{facility.name}'s scheduler decides when each run starts; a run waits while "
            "the cluster or the allocation's limits are full."
        )
    slots, in_use = capacity.slots, capacity.in_use
    free = slots - in_use
    sentence = (
        f"{facility.name} runs {slots} run{'s' if slots != 1 else ''} at a time (one per "
        f"{facility.unit.one}, all users together); {in_use} of {slots} in use now, {free} free."
    )
    if concurrency is not None and concurrency > slots:
        sentence += f" A concurrency above {slots} cannot help here."
    return sentence + ' Runs beyond the free slots wait, each saying "waiting for a free slot".'


def _per_job(node: NodeType) -> int:
    """The most accelerators one job may use on a node type: one node's, or the catalogue's
    `max_accelerators` where that is lower (a workstation's 1)."""
    most = node.accelerators_per_node
    return min(most, node.max_accelerators) if node.max_accelerators else most


def _catalogue_limit(facility: Facility) -> tuple[int, str] | None:
    """The most GPUs one job may use on the facility by its catalogue (its most generous node
    type: a job runs on one node, Slurm's `--gres=gpu:N`, one cloud instance), with why; None
    when the catalogue lists no node with accelerators."""
    nodes = [n for n in facility.node_types.all() if n.accelerators_per_node > 0]
    if not nodes:
        return None
    node = max(nodes, key=lambda n: (_per_job(n), n.name))
    most = _per_job(node)
    if most < node.accelerators_per_node:
        return most, f"{node.name} allows {most} per job"
    return most, f"a job runs on one node, and its largest, {node.name}, has {most}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def gpus_refusal(facility: Facility, gpus: int) -> str | None:
    """Why a run needing `gpus` can never start on `facility`, or None when it can (or nothing
    says): more than all its slots where the backend knows them (the local backend), or more
    than its catalogue allows one job (`_catalogue_limit`), whichever is lower. The first thing
    said about too many GPUs, before any rule that depends on the GPU count (a batch size per
    GPU)."""
    capacity = _capacity(facility)
    catalogue = _catalogue_limit(facility)
    if catalogue is not None and gpus > catalogue[0]:
        if capacity is None or catalogue[0] < capacity.slots or gpus <= capacity.slots:
            most, why = catalogue
            return (
                f"{facility.name} offers at most {_plural(most, 'GPU')} per job ({why}), so a "
                f"run needing {gpus} could never start there: ask for at most {most}."
            )
    if capacity is not None and gpus > capacity.slots:
        slots, unit = capacity.slots, facility.unit  # CPUs on a facility without GPUs
        return (
            f"{facility.name} runs at most {slots} {unit.of(slots)} at a time, so a run needing "
            f"{gpus} could never start there: ask for at most {slots}."
        )
    return None


def check_gpus_fit(facility: Facility, gpus: int) -> None:
    """Refuse (GpusRefused: 400 on `gpus`) a run needing more GPUs than the facility's backend
    can ever run at once. The one check of this for a launch (`job_launch`, `sweep_launch`) and
    its estimate (`job_estimate`, `sweep_estimate`, the sweep form's Estimate), so an estimate
    never says a launch fits that the launch refuses."""
    refusal = gpus_refusal(facility, gpus)
    if refusal:
        raise GpusRefused(refusal)
