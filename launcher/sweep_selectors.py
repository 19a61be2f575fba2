"""Reading a sweep: its cells counted by state, its leaderboard (with each configuration's
furthest rung under early stopping) and its schedule: the rungs, the decisions, GPU-hours
charged and the estimated GPU-hours saved (launcher/services/sweeps.py writes the schedule)."""

from __future__ import annotations

from decimal import Decimal
from statistics import median
from typing import Any

from django.db.models import Count

from . import sweepgrid
from .models import Job, Sweep
from .services.sweeps import cells_epochs, configurations, epochs_done

S = Job.State
SAVED_BASIS = (
    "an estimate: the epochs each stopped cell did not run x the seconds per epoch its "
    "configuration measured (else the sweep's median) x its GPUs"
)


def sweep_counts(sweep: Sweep) -> dict[str, int]:
    """How many cells are in each state (one query)."""
    rows = sweep.jobs.order_by().values("state").annotate(n=Count("pk"))
    counts = {state: 0 for state in Job.State.values}
    counts.update({r["state"]: r["n"] for r in rows})
    return counts


def sweep_finished(sweep: Sweep, counts: dict[str, int]) -> bool:
    """Every cell is final and no more will come: all `size` cells ran, or (a staged sweep,
    which asks and releases in the pass that sees its last cell end) none is left live."""
    final = sum(counts.get(state, 0) for state in Job.FINAL)
    return final >= sweep.size or (sweep.staged and final == sum(counts.values()) and final > 0)


def sweep_outcome(counts: dict[str, int], *, done: bool) -> tuple[str, str]:
    """The sweep's state for its header (status, label): in progress until done; then
    cancelled or failed when no cell succeeded, else finished, saying how many were cancelled
    or failed (one fact: the header never says Finished beside six cancelled cells)."""
    if not done:
        return "running", "In progress"
    succeeded = counts.get(S.SUCCEEDED, 0) + counts.get(S.STOPPED_EARLY, 0)
    cancelled, failed = (
        counts.get(S.CANCELLED, 0),
        counts.get(S.FAILED, 0) + counts.get(S.TIMEOUT, 0),
    )
    if not succeeded:
        return ("cancelled", "Cancelled") if cancelled >= failed else ("failed", "Failed")
    rest = [f"{n} {what}" for n, what in ((cancelled, "cancelled"), (failed, "failed")) if n]
    return "succeeded", "Finished" + (f" ({', '.join(rest)})" if rest else "")


def sweep_leaderboard(
    sweep: Sweep, *, sort_by: str | None = None, level: str = "patient"
) -> list[dict[str, Any]]:
    """Mean cross-validated metrics per hyper-parameter combination with 95% intervals; under
    early stopping each row also says how far its configuration went (`furthest_rung`,
    `stopped_at_rung`, 0-based; `stopped_at_epoch`)."""
    rows = list(sweep.jobs.order_by("array_index").values_list("params", "state", "metrics"))
    board = sweepgrid.leaderboard(
        [
            (params, metrics if state == S.SUCCEEDED and metrics else None)
            for params, state, metrics in rows
        ],
        sort_by=sort_by or sweep.sort_by,
        level=level,
    )
    configs = (sweep.schedule or {}).get("configs")
    if configs is not None:
        for row in board:
            info = configs.get(sweepgrid.combo_label(row)) or {}
            row["furthest_rung"] = info.get("passed", -1)
            row["stopped_at_rung"] = info.get("stopped_at_rung")
            row["stopped_at_epoch"] = info.get("epoch")
    return board


def _seconds_per_epoch(cell: Job) -> float | None:
    done = epochs_done(cell)
    if not done or not cell.started_at or not cell.finished_at:
        return None
    return (cell.finished_at - cell.started_at).total_seconds() / done


def sweep_schedule(sweep: Sweep) -> dict[str, Any] | None:
    """The early-stopping schedule as pages and the API show it; None without one."""
    spec = sweepgrid.validate(sweep.grid)
    if spec.early_stopping is None:
        return None
    schedule = sweep.schedule or {}
    cells = list(
        sweep.jobs.order_by("array_index").only(
            "pk",
            "array_index",
            "params",
            "state",
            "gpus",
            "gpu_seconds",
            "started_at",
            "finished_at",
            "stopped_at_epoch",
            "progress",
            "metrics",
        )
    )
    epochs = cells_epochs(sweep, spec)
    rungs = list(spec.early_stopping.rungs(epochs))
    groups = configurations(cells)
    measured = [s for c in cells if c.state != S.STOPPED_EARLY and (s := _seconds_per_epoch(c))]
    fallback = median(measured) if measured else None
    saved = 0.0
    known = True
    configs_out = []
    for label, group in groups.items():
        info = (schedule.get("configs") or {}).get(label) or {}
        own = [s for c in group if (s := _seconds_per_epoch(c))]
        per_epoch = median(own) if own else fallback
        stopped_cells = [c for c in group if c.state == S.STOPPED_EARLY]
        for cell in stopped_cells:
            left = epochs - (cell.stopped_at_epoch or 0)
            if per_epoch is None:
                known = False
            else:
                saved += left * per_epoch * max(cell.gpus, 1)
        configs_out.append(
            {
                "configuration": {a: group[0].params.get(a) for a in sweepgrid.AXES},
                "furthest_rung": info.get("passed", -1),
                "stopped_at_rung": info.get("stopped_at_rung"),
                "stopped_at_epoch": info.get("epoch"),
                "epochs_run": max((epochs_done(c) for c in group), default=0),
                "cells_stopped": len(stopped_cells),
                "values": {
                    str(rungs[int(k)]): row[label][0]
                    for k, row in (schedule.get("values") or {}).items()
                    if label in row and int(k) < len(rungs)
                },
            }
        )
    charged = sum((Decimal(c.gpu_seconds) for c in cells), Decimal(0)) / 3600
    return {
        "method": spec.early_stopping.method,
        "eta": spec.early_stopping.eta,
        "min_epochs": spec.early_stopping.min_epochs,
        "rungs": rungs,
        "epochs": epochs,
        "metric": sweep.sort_by,
        "configurations": configs_out,
        # Hours as the API writes them: numbers, unrounded (core/figure_fields.py).
        "gpu_hours_charged": float(charged),
        "saved_gpu_hours_estimate": saved / 3600 if known else None,
        "saved_basis": SAVED_BASIS,
    }
