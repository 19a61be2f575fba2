"""The sweeps of bench_sweeps.py: launching one sweep and driving it as the beat does until every
cell is final and charged, reading its result back from the ledger; the rows in order (full grid,
ASHA, TPE + ASHA with ASHA's charge as budget); and killing the cells left when the bench ends.
"""

from __future__ import annotations

import json
import os
import signal
import time
from decimal import ROUND_UP, Decimal
from pathlib import Path
from typing import Any

from bench.sweeps_world import (
    CHARGE_WAIT_S,
    CONCURRENCY,
    ETA,
    METRIC,
    MIN_EPOCHS,
    POLL_SECONDS,
    SWEEP_TIMEOUT_S,
    WALL_TIME_MINUTES,
    _configurations,
)


def _done(sweep: Any) -> tuple[bool, list[str]]:
    """Whether every cell is final and every cell that ran (its supervisor wrote pid.json) is
    charged; with what is still missing."""
    from allocations.models import UsageRecord
    from launcher.local.places import cell_dir
    from launcher.models import Job

    jobs = list(sweep.jobs.select_related("allocation__facility"))
    waiting = [j for j in jobs if j.state not in Job.FINAL]
    if waiting:
        return False, [f"{len(waiting)} cell(s) not final"]
    charged = set(
        UsageRecord.objects.filter(job_id__in=[j.pk for j in jobs]).values_list("job_id", flat=True)
    )
    missing = [
        j
        for j in jobs
        if j.scheduler_id
        and j.pk not in charged
        and (cell_dir(j.allocation.facility, j) / "pid.json").exists()
    ]
    return not missing, [f"job {j.pk} ({j.state}) ran but is not charged" for j in missing]


def _run_sweep(label: str, user: Any, allocation: Any, grid: dict, params: dict) -> dict:
    """Launch, drive as the beat does, and read the result back from the ledger."""
    from allocations.models import UsageRecord
    from launcher import tasks
    from launcher.models import Job
    from launcher.services import sweep_launch, usage_ingest_all
    from launcher.sweep_selectors import sweep_leaderboard

    t0 = time.monotonic()
    sweep = sweep_launch(
        by=user,
        allocation=allocation,
        grid=grid,
        gpus=1,
        wall_time_minutes=WALL_TIME_MINUTES,
        params=params,
        concurrency=CONCURRENCY,
        name=f"bench: {label}",
        sort_by=METRIC,
    )
    why: list[str] = []
    final_at = None
    while time.monotonic() - t0 < SWEEP_TIMEOUT_S:
        tasks.poll_jobs()
        usage_ingest_all()
        finished, why = _done(sweep)
        if finished:
            break
        if why and why[0].endswith("not final"):
            final_at = None
        elif final_at is None:
            final_at = time.monotonic()
        elif time.monotonic() - final_at > CHARGE_WAIT_S:
            raise SystemExit(f"{label}: every cell is final but not charged: {'; '.join(why)}")
        time.sleep(POLL_SECONDS)
    else:
        raise SystemExit(f"{label}: not finished after {SWEEP_TIMEOUT_S} s: {'; '.join(why)}")
    wall = time.monotonic() - t0
    sweep.refresh_from_db()
    jobs = list(sweep.jobs.order_by("array_index"))
    ids = [j.pk for j in jobs]
    seconds = sum(
        UsageRecord.objects.filter(job_id__in=ids).values_list("gpu_seconds", flat=True), 0
    )
    ran = [j for j in jobs if j.started_at is not None]
    charged = dict(UsageRecord.objects.filter(job_id__in=ids).values_list("job_id", "gpu_seconds"))
    # (epochs trained, seconds charged) of each cell that ran: a stopped cell's epochs are those
    # it had finished when stopped; a finished one's, its history.
    points = [(_epochs_run(j), charged[j.pk]) for j in ran if j.pk in charged]
    states: dict[str, int] = {}
    for j in jobs:
        states[j.state] = states.get(j.state, 0) + 1
    return {
        "label": label,
        "sweep": sweep,
        "configurations": len(
            {tuple(j.params[a] for a in ("model", "lr", "lr_step", "weight_decay")) for j in ran}
        ),
        "cells": len(ran),
        "cells_made": len(jobs),
        "stopped": sum(1 for j in jobs if j.state == Job.State.STOPPED_EARLY),
        "states": states,
        "gpu_hours": Decimal(seconds) / 3600,
        "epochs": sum(e for e, _ in points),
        "points": points,
        "board": sweep_leaderboard(sweep),
        "wall_s": wall,
        "jobs": jobs,
    }


def _epochs_run(job: Any) -> int:
    from launcher.models import Job

    if job.state == Job.State.STOPPED_EARLY:
        return int(job.stopped_at_epoch or 0)
    history = (job.metrics or {}).get("history") or (job.progress or {}).get("epoch_metrics") or []
    return len(history)


def _stop_cells(tmp: Path) -> None:
    """Kill what is left of the cells under tmp (detached: they outlive this process): only
    processes whose working directory is one of those cell folders."""
    for pid_file in tmp.glob("local-jobs/*/*/*/pid.json"):
        try:
            info = json.loads(pid_file.read_text())
        except (OSError, ValueError):
            continue
        for pid in (info.get("child_pid"), info.get("pid")):
            try:
                if pid and os.readlink(f"/proc/{pid}/cwd") == str(pid_file.parent):
                    os.kill(pid, signal.SIGKILL)
            except OSError:
                continue


def _sweeps(
    rows: list[str], user: Any, allocation: Any, grid: dict, params: dict
) -> tuple[list[dict], list[str]]:
    """Run the rows in order; TPE's budget is what ASHA was charged (when ASHA ran first). A
    row that fails is reported and the others still run: (results, errors)."""
    stopping = {"method": "asha", "eta": ETA, "min_epochs": MIN_EPOCHS}
    results: list[dict] = []
    errors: list[str] = []
    for row in rows:
        if row == "full":
            label, spec = "full grid", grid
        elif row == "asha":
            label, spec = f"ASHA eta {ETA}", {**grid, "early_stopping": stopping}
        elif row == "tpe":
            search: dict[str, Any] = {"strategy": "tpe", "trials": _configurations(grid), "seed": 0}
            asha = next((r for r in results if r["label"].startswith("ASHA")), None)
            if asha is not None:
                budget = asha["gpu_hours"].quantize(Decimal("0.001"), rounding=ROUND_UP)
                search["gpu_hours"] = float(budget)
            label, spec = "TPE + ASHA", {**grid, "early_stopping": stopping, "search": search}
        else:
            raise SystemExit(f"unknown row {row!r}: full, asha or tpe")
        try:
            results.append(_run_sweep(label, user, allocation, spec, params))
        except Exception as error:  # the table of the other rows still prints
            errors.append(f"{label}: {type(error).__name__}: {error}")
    return results, errors
