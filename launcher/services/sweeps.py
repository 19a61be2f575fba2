"""Staged sweeps: a sweep with early stopping or a random/TPE search is driven by the portal.

`sweep_advance` runs after every poll that saw one of its cells (and on the beat), under the
sweep's row lock, so two pollers never judge or release twice:

1. **Judge** (ASHA, launcher/search/asha.py): a configuration whose running folds have all
   reached rung k (min_epochs x eta^k epochs) is recorded there with its validation metric
   averaged over those folds; outside the top max(1, n // eta) of the n recorded, it stops on
   every fold: each live cell moves to `stopped_early` (with its epoch and rung), its
   reservation is released in the same transaction, and the backend cancels it (the trainer
   checkpoints and exits; it is charged what it ran, from the backend's records).
2. **Ask** (random/TPE, launcher/search/sampling.py): when fewer cells wait than free slots,
   Optuna is asked for more configurations, rebuilt from the sweep's rows; within `trials` and
   the search's GPU-hour budget.
3. **Release**: held cells go to the scheduler while fewer than `concurrency` are live, each
   reserving the per-cell worst case (its wall time) under the allocation's row lock, only
   while the allocation has the hours left; a batch is submitted as one array on Slurm.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.utils import timezone

from allocations.models import Allocation
from allocations.selectors import allocation_ledger
from allocations.services import ledger_jobs_change
from allocations.transitions import record_event
from core.tasks import enqueue

from .. import sweepgrid
from ..backends.contract import Capability
from ..backends.registry import backend_for
from ..models import Job, Sweep
from ..search import asha, sampling
from ..states import job_move_if

log = logging.getLogger(__name__)
S = Job.State
#: Estimate fields a sampled search's new cells copy from the sweep's first cell.
ESTIMATE_FIELDS = (
    "estimate_source",
    "estimate_basis",
    "estimate_confidence",
    "estimate_neighbour",
    "predicted_hours",
    "predicted_images_per_s",
)


@dataclass(frozen=True)
class Advance:
    """What one pass did."""

    stopped: int = 0
    asked: int = 0
    released: int = 0


def cell_epochs(job: Job) -> list[dict[str, Any]]:
    """The validation results of each epoch the cell finished (progress.json's
    `epoch_metrics`, or metrics.json's history once it has finished)."""
    found = (job.progress or {}).get("epoch_metrics") or (job.metrics or {}).get("history") or []
    return [e for e in found if isinstance(e, dict) and isinstance(e.get("epoch"), int)]


def epochs_done(job: Job) -> int:
    return max((e["epoch"] for e in cell_epochs(job)), default=0)


def value_at(job: Job, epoch: int, metric: str) -> tuple[float | None, float] | None:
    """(the ranking metric, the loss) on the validation split at `epoch`, or None."""
    for entry in cell_epochs(job):
        if entry["epoch"] != epoch:
            continue
        loss, value = entry.get("val_loss"), (entry.get("val") or {}).get(metric)
        if not isinstance(loss, (int, float)):
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return (None, float(loss))
        return (float(value), float(loss))
    return None


def configurations(cells: Iterable[Job]) -> dict[str, list[Job]]:
    """The cells grouped by configuration (every fold of one combination), in index order."""
    found: dict[str, list[Job]] = {}
    for cell in sorted(cells, key=lambda c: c.array_index or 0):
        found.setdefault(sweepgrid.combo_label(cell.params), []).append(cell)
    return found


def cells_epochs(sweep: Sweep, spec: sweepgrid.GridSpec) -> int:
    return int({**sweep.params, **spec.fixed}.get("epochs", 50))


def sweep_advance(*, sweep_id: int) -> Advance:
    """Judge, ask, release (module docstring). Idempotent; a sweep that is not staged, or
    whose cells are all final, is left alone."""
    stopped: list[Job] = []
    with transaction.atomic():
        sweep = (
            Sweep.objects.select_for_update(of=("self",))
            .select_related("allocation__facility")
            .filter(pk=sweep_id, staged=True)
            .first()
        )
        if sweep is None:
            return Advance()
        spec = sweepgrid.validate(sweep.grid)
        cells = list(sweep.jobs.select_related("allocation").order_by("array_index"))
        if spec.early_stopping is not None:
            stopped = _judge(sweep, spec, cells)
        asked = _ask(sweep, spec, cells) if spec.sampled else []
        released = _release(sweep, spec, [*cells, *asked])
        sweep.save(update_fields=["schedule", "releases"])
    _cancel_remote(stopped)
    return Advance(stopped=len(stopped), asked=len(asked), released=released)


def sweeps_to_advance() -> list[int]:
    """Staged sweeps with cells not yet final (what the beat advances)."""
    return sorted(
        set(
            Job.objects.filter(sweep__staged=True)
            .exclude(state__in=Job.FINAL)
            .values_list("sweep_id", flat=True)
        )
    )


def sweep_stage(
    *, sweep: Sweep, spec: sweepgrid.GridSpec, cells: list[Job], template: dict[str, Any]
) -> int:
    """At launch, inside its transaction (the allocation row locked): a sampled search's first
    configurations, then the first release. Returns the cells released."""
    asked = _ask(sweep, spec, cells, template) if spec.sampled else []
    released = _release(sweep, spec, [*cells, *asked])
    sweep.save(update_fields=["schedule", "releases"])
    return released


# 1. Judge.


def _judge(sweep: Sweep, spec: sweepgrid.GridSpec, cells: list[Job]) -> list[Job]:
    stopping = spec.early_stopping
    assert stopping is not None
    rungs = stopping.rungs(cells_epochs(sweep, spec))
    schedule = sweep.schedule or {}
    schedule.update({"rungs": list(rungs), "eta": stopping.eta, "metric": sweep.sort_by})
    values: dict[str, dict[str, list]] = schedule.setdefault("values", {})
    configs: dict[str, dict[str, Any]] = schedule.setdefault("configs", {})
    stopped: list[Job] = []
    for label, group in configurations(cells).items():
        info = configs.setdefault(label, {"passed": -1, "stopped_at_rung": None})
        if info["stopped_at_rung"] is not None:
            continue
        for k in range(info["passed"] + 1, len(rungs)):
            rung = rungs[k]
            reached = [c for c in group if epochs_done(c) >= rung]
            behind = [
                c for c in group if c.state in (S.RUNNING, S.PREEMPTED) and epochs_done(c) < rung
            ]
            points = [p for c in reached if (p := value_at(c, rung, sweep.sort_by)) is not None]
            if not points or behind:
                break
            recorded = values.setdefault(str(k), {})
            recorded[label] = [*asha.mean_value(points), len(points)]
            live = [c for c in group if c.state not in Job.FINAL]
            if asha.promoted(label, recorded, stopping.eta) or not live:
                info["passed"] = k
                continue
            info.update(stopped_at_rung=k, epoch=rung)
            stopped += _stop(sweep, live, k, rung, len(recorded), stopping.eta)
            break
    sweep.schedule = schedule
    return stopped


def _stop(sweep: Sweep, live: list[Job], k: int, rung: int, n: int, eta: int) -> list[Job]:
    reason = f"outside the top {max(1, n // eta)} of {n} at rung {k + 1} (epoch {rung}), eta {eta}"
    now, moved = timezone.now(), []
    for cell in live:
        if job_move_if(
            job=cell,
            to=S.STOPPED_EARLY,
            comment=f"Stopped early: its configuration was {reason}.",
            state_reason=reason,
            finished_at=now,
            stopped_at_epoch=epochs_done(cell),
            rung=k,
        ):
            moved.append(cell)
    if moved:
        record_event(
            sweep,
            actor=None,
            from_state="running",
            to_state="running",
            comment=f"{len(moved)} cell(s) of {sweepgrid.combo_label(live[0].params)} stopped: "
            f"{reason}.",
        )
    return moved


def _cancel_remote(cells: Sequence[Job]) -> None:
    """Stop the stopped cells on their backend (outside any transaction): scancel of the
    array task on Slurm, SIGTERM locally. A held or unsubmitted cell never starts."""
    submitted = [c for c in cells if c.scheduler_id]
    if not submitted:
        return
    facility = submitted[0].allocation.facility
    backend = backend_for(facility)
    if Capability.CANCEL in backend.capabilities:
        backend.cancel(facility=facility, jobs=submitted)


# 2. Ask.


def _history(sweep: Sweep, groups: dict[str, list[Job]]) -> list[sampling.Trial]:
    configs = (sweep.schedule or {}).get("configs", {})
    values = (sweep.schedule or {}).get("values", {})
    rungs = (sweep.schedule or {}).get("rungs", [])
    trials = []
    for label, group in groups.items():
        params = {a: group[0].params[a] for a in sampling.AXES}
        info = configs.get(label) or {}
        if info.get("stopped_at_rung") is not None:
            reached = {
                rungs[int(k)]: row[label][0]
                for k, row in values.items()
                if label in row and row[label][0] is not None
            }
            trials.append(sampling.Trial(params, intermediate=reached, stopped=True))
            continue
        last = int(group[0].params.get("epochs", 50))
        finished = [c for c in group if c.state == S.SUCCEEDED]
        points = [p for c in finished if (p := value_at(c, last, sweep.sort_by))]
        done = all(c.state in Job.FINAL for c in group)
        value = asha.mean_value(points)[0] if done and points else None
        trials.append(sampling.Trial(params, value=value))
    return trials


def _ask(
    sweep: Sweep, spec: sweepgrid.GridSpec, cells: list[Job], template: dict[str, Any] | None = None
) -> list[Job]:
    search = spec.search
    assert search is not None
    groups = configurations(cells)
    waiting = sum(1 for c in cells if c.held and c.state == S.QUEUED)
    live = sum(1 for c in cells if not c.held and c.state not in Job.FINAL)
    want = sweep.concurrency - live - waiting
    left = search.trials - len(groups)
    if want <= 0 or left <= 0 or not _budget_allows(sweep, spec, cells):
        return []
    count = min(left, math.ceil(want / spec.folds))
    drawn = sampling.ask(
        strategy=search.strategy,
        seed=search.seed,
        space=spec.space,
        history=_history(sweep, groups),
        count=count,
        startup=max(1, min(10, search.trials // 3)),
    )
    if template is None:
        template = {f: getattr(cells[0], f) for f in ESTIMATE_FIELDS} if cells else {}
    start = max((c.array_index or 0 for c in cells), default=-1) + 1
    new = []
    for config in drawn:
        for cell in sweepgrid.config_cells(config, folds=spec.folds, fixed=spec.fixed, start=start):
            index = cell.pop("index")
            new.append(
                Job(
                    allocation=sweep.allocation,
                    sweep=sweep,
                    created_by_id=sweep.created_by_id,
                    params={**sweep.params, **cell},
                    gpus=sweep.gpus,
                    wall_time_minutes=sweep.wall_time_minutes,
                    token=sweep.token,
                    array_index=index,
                    held=True,
                    **template,
                )
            )
        start += spec.folds
    return Job.objects.bulk_create(new)


def _budget_allows(sweep: Sweep, spec: sweepgrid.GridSpec, cells: list[Job]) -> bool:
    """Whether one more cell's worst case fits the search's own GPU-hour budget: what the
    sweep's released cells ran (charged, or their measured wall time while the charge is on its
    way) plus what the live ones reserve."""
    budget = spec.search.gpu_hours if spec.search else None
    if budget is None:
        return True
    spent = Decimal(0)
    for cell in cells:
        if cell.held:
            continue
        if cell.state in Job.FINAL:
            ran = 0.0
            if cell.started_at and cell.finished_at:
                ran = (cell.finished_at - cell.started_at).total_seconds() * max(cell.gpus, 1)
            spent += Decimal(max(cell.gpu_seconds, ran)) / 3600
        else:
            spent += cell.estimate_gpu_hours
    return spent + sweep.cell_estimate_gpu_hours <= budget


# 3. Release.


def _release(sweep: Sweep, spec: sweepgrid.GridSpec, cells: list[Job]) -> int:
    held = [c for c in cells if c.held and c.state == S.QUEUED]
    live = [c for c in cells if not c.held and c.state not in Job.FINAL]
    room = sweep.concurrency - len(live)
    if not held or room <= 0:
        return 0
    allocation = Allocation.objects.select_for_update(of=("self",)).get(pk=sweep.allocation_id)
    why = _cannot_release(sweep, spec, allocation, cells)
    fit = room if why is None else 0
    if why is None and sweep.cell_estimate_gpu_hours > 0:
        ledger = allocation_ledger(allocation.pk)
        fit = min(fit, int(ledger.gpu_hours_remaining // sweep.cell_estimate_gpu_hours))
        money = ledger.budget_remaining
        if money is not None and sweep.cell_estimate_cost > 0:
            fit = min(fit, int(money // sweep.cell_estimate_cost))
        if fit <= 0:
            why = (
                f"not enough left on the allocation for another cell ({ledger.gpu_hours_remaining}"
                f" GPU-hours left; a cell reserves {sweep.cell_estimate_gpu_hours})"
            )
    take = held[: max(fit, 0)]
    if not take:
        if not live and why:  # nothing running will free hours: the rest cannot run
            _cancel_held(held, why)
        return 0
    sweep.releases += 1
    token = f"{sweep.token}-r{sweep.releases}"
    ids = [c.pk for c in take]
    with ledger_jobs_change(allocation_ids=[allocation.pk], job_ids=ids):
        Job.objects.filter(pk__in=ids).update(
            held=False,
            token=token,
            estimate_gpu_hours=sweep.cell_estimate_gpu_hours,
            estimate_cost=sweep.cell_estimate_cost,
        )
    enqueue("launcher.submit_sweep", sweep.pk)
    return len(take)


def _cannot_release(
    sweep: Sweep, spec: sweepgrid.GridSpec, allocation: Allocation, cells: list[Job]
) -> str | None:
    if allocation.status != Allocation.Status.ACTIVE:
        return f"the allocation is {allocation.get_status_display().lower()}"
    if not _budget_allows(sweep, spec, [c for c in cells if not c.held]):
        return f"the search's budget of {spec.search.gpu_hours if spec.search else 0} GPU-hours is spent"
    return None


def _cancel_held(held: list[Job], why: str) -> None:
    now = timezone.now()
    for cell in held:
        job_move_if(
            job=cell,
            to=S.CANCELLED,
            comment=f"Not run: {why}.",
            state_reason=f"not run: {why}"[:300],
            finished_at=now,
        )
