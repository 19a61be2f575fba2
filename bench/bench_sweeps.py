"""Sweeps: early stopping and search, on real training runs (docs/performance.md, "Sweeps:
early stopping and search").

The same grid three times on this machine's CPU, on the `local` backend (real detached trainer
processes, `python -m launcher.workloads.ctxray train`, two at once), with a small synthetic CT
set:

1. **full grid**: every configuration x fold to its last epoch (no early stopping);
2. **ASHA eta 3**: the same grid with `"early_stopping": {"method": "asha", "eta": 3,
   "min_epochs": 1}` (rungs at epochs 1, 3, 9 of 27);
3. **TPE + ASHA**: a TPE search over the same grid points (the axes kept as lists), `trials` =
   the grid's configurations, with early stopping too and a GPU-hour budget of what ASHA was
   charged (rounded up to 0.001 GPU-hours).

The portal is driven in-process as its beat drives it: `sweep_launch`, then every 0.5 s the
beat's poll (`launcher.poll_jobs`: `jobs_poll` per facility, `sweep_advance` per staged sweep,
stalled submissions) and the usage ingest (`usage_ingest_all`), until every cell is final and
every cell that ran is charged. GPU-hours charged are read back from the ledger (the sum of
UsageRecord.gpu_seconds of the sweep's jobs / 3600), not from the estimates: the local backend
charges each cell's measured process wall time x its slots, start-up included.

Prints the machine, the parameters and one row per sweep: configurations run, cells, cells
stopped early, epochs trained, GPU-hours charged, the ratios to the full grid, the best
configuration with its leaderboard mean and 95% interval, whether it is the full grid's best or
inside the full best's interval (judged on the full grid's own figure for that configuration,
with its rank there), and the wall time. Then a least-squares split of every cell's charge into
a fixed cost per cell (process start-up, final evaluation or stop) and a cost per epoch, each
row's share of fixed cost, and each row's ratio at those two pooled costs (its cells and epochs
alone, without the load of the moment it ran in). Exits 1 when ASHA was charged more than 1/3
of the full grid, when its best configuration is neither the full grid's best nor inside its
interval, or when a row failed, so `make bench` fails loudly. About 23-25 minutes on the 2-core
VM with other test runs beside it.

Runs against a throwaway SQLite database and var folder under /tmp (DATABASE_URL and the rest
are overridden), with CELERY_TASK_ALWAYS_EAGER so submissions run inline, and with members'
work run as the portal (PORTAL_LOCAL_RUN_AS_MEMBERS=no: no system accounts are created).

Run: python bench/bench_sweeps.py [--rows full,asha,tpe] [--synthetic-n N] [--quick] [--keep]
[--dump FILE] (--quick: a 3-minute smoke test of the bench itself, 3 configurations x 4 epochs)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import sys
import tempfile
import time
from decimal import ROUND_UP, Decimal
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# The grid: 18 configurations (one model, 6 learning rates x 3 weight decays) x 2 folds.
# Listed as a user would write them (largest first); the grid expands model, lr, lr_step,
# weight_decay, fold from the outermost, so configurations arrive in this order.
MODELS = ["resnet18"]
LRS = [1e-1, 1e-2, 3e-3, 1e-3, 1e-4, 1e-5]
WEIGHT_DECAYS = [1e-2, 1e-4, 0.0]
LR_STEPS = [10]
FOLDS = 2
EPOCHS = 27
ETA = 3
MIN_EPOCHS = 1
# Shared by every cell: a synthetic CT set of SYNTHETIC_N images (3 per patient) at 32 px, one
# torch thread per run (two runs share the two cores), the trainer's own patience off (every
# cell of the full grid runs its 27 epochs), a fixed seed. `deterministic` is left off: on the
# CPU with one thread the runs are bit-for-bit reproducible without it (the table checks it:
# a configuration run in two sweeps has the same mean), and switching it on imports
# torch._dynamo at start-up (~2.8 s per cell, all of it charged).
# SYNTHETIC_N: every cell, stopped or not, pays a fixed ~8 s (the trainer's start-up, mostly
# importing MONAI and torch, and its end), and ASHA saves only epochs. At 96 images (an epoch
# ~1 s) that fixed cost was two thirds of ASHA's charge and ASHA came to 0.36 of the full grid;
# at 144 (an epoch ~1.5-1.8 s, 72 training images a fold) training dominates.
SYNTHETIC_N = 144
FIXED: dict[str, Any] = {
    "epochs": EPOCHS,
    "patience": EPOCHS,
    "size": 32,
    "batch_size": 8,
    "threads": 1,
    "bootstrap": 10,
    "seed": 0,
}
METRIC = "roc_auc"
CONCURRENCY = 2
SLOTS = 2
# Each cell's wall-time limit. It is also what a live cell reserves, and a search's budget
# counts the live cells' reservations (launcher/services/sweeps.py `_budget_allows`), so it is
# kept short: a cell here runs 40-70 s (a cell past it would end `timeout`, shown per row).
WALL_TIME_MINUTES = 2
POLL_SECONDS = 0.5
SWEEP_TIMEOUT_S = 40 * 60
CHARGE_WAIT_S = 60  # a cell's exit.json comes a moment after its final state
TARGET_RATIO = 1 / 3


def _environment(tmp: Path) -> None:
    """A throwaway portal in `tmp`, whatever `make bench` exported."""
    os.environ.update(
        DATABASE_URL=f"sqlite:///{tmp / 'bench.sqlite3'}",
        PORTAL_VAR_DIR=str(tmp),
        CELERY_TASK_ALWAYS_EAGER="true",
        CELERY_BROKER_URL="memory://",
        CACHE_URL="",
        SECRET_KEY="bench",
        DEBUG="false",
        EMAIL_URL="locmem://",
        PORTAL_LOCAL_RUN_AS_MEMBERS="no",
        DJANGO_SETTINGS_MODULE="portal.settings",
    )
    os.environ.pop("PORTAL_LOCAL_JOBS_DIR", None)
    os.environ.pop("PORTAL_LOCAL_SECONDS_PER_MINUTE", None)


def _machine() -> str:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"{os.cpu_count()} CPU cores ({model or platform.processor() or 'unknown CPU'}), "
        f"load average {load}"
    )


def _setup() -> tuple[Any, Any]:
    """Migrate, seed the demo world, give the researcher an active allocation on `local`
    (1000 GPU-hours) and the facility two slots. Returns (user, allocation)."""
    import datetime as dt

    import django

    django.setup()
    import logging

    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    logging.getLogger("celery").setLevel(logging.WARNING)  # no line per inline task
    call_command("migrate", verbosity=0)
    call_command("seed_demo", password="demo", stdout=open(os.devnull, "w"))
    from allocations.models import Allocation, Facility, Project

    facility = Facility.objects.get(slug="local")
    # The seeded `local` has one node type of one CPU "accelerator": one slot. Two, for the
    # two cores (launcher/local/places.py `facility_slots`).
    facility.backend_settings = {**(facility.backend_settings or {}), "slots": SLOTS}
    facility.save(update_fields=["backend_settings"])
    today = dt.date.today()
    allocation = Allocation.objects.create(
        project=Project.objects.get(code="ABC-DEF-001"),
        facility=facility,
        kind="full",
        gpu_hours=Decimal(1000),
        start_date=today,
        end_date=today + dt.timedelta(days=30),
        status=Allocation.Status.ACTIVE,
    )
    # As provisioning leaves it: named and activated (usage is read only for such allocations,
    # launcher/selectors.py `allocations_owing_usage`).
    from django.utils import timezone

    allocation.account_name = allocation.default_account_name()
    allocation.activated_at = timezone.now()
    allocation.save(update_fields=["account_name", "activated_at"])
    return get_user_model().objects.get(username="researcher"), allocation


def _grids(quick: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the grid, the shared params)."""
    fixed = dict(FIXED)
    lrs, decays = LRS, WEIGHT_DECAYS
    if quick:  # a smoke test of the bench itself: 3 configurations, 4 epochs
        fixed.update(epochs=4, patience=4)
        lrs, decays = [1e-2, 1e-3, 1e-4], [1e-4]
    grid = {
        "models": MODELS,
        "lrs": lrs,
        "lr_steps": LR_STEPS,
        "weight_decays": decays,
        "folds": FOLDS,
        "fixed": fixed,
    }
    return grid, {"dataset": "synthetic-ct", "synthetic_n": SYNTHETIC_N}


def _configurations(grid: dict[str, Any]) -> int:
    return (
        len(grid["models"]) * len(grid["lrs"]) * len(grid["lr_steps"]) * len(grid["weight_decays"])
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


def _fit(points: list[tuple[int, int]]) -> tuple[float, float] | None:
    """Least squares: charged seconds = a + b x epochs (a: a cell's fixed cost, its process
    start-up and its end; b: seconds per epoch)."""
    if len({e for e, _ in points}) < 2:
        return None
    n = len(points)
    mx, my = sum(e for e, _ in points) / n, sum(s for _, s in points) / n
    b = sum((e - mx) * (s - my) for e, s in points) / sum((e - mx) ** 2 for e, _ in points)
    return my - b * mx, b


def _key(row: dict) -> tuple:
    return (row["model"], row["lr"], row["lr_step"], row["weight_decay"])


def _best(board: list[dict]) -> dict | None:
    return next((r for r in board if r[METRIC]["mean"] is not None), None)


def _config_text(row: dict) -> str:
    return f"{row['model']} lr {row['lr']:g} wd {row['weight_decay']:g} step {row['lr_step']}"


def _interval(row: dict) -> str:
    m = row[METRIC]
    ci = m["ci"]
    return f"{m['mean']:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else f"{m['mean']:.3f}"


def _verdict(result: dict, full: dict) -> tuple[bool, str]:
    """Whether this sweep's best configuration is the full grid's best or inside its interval,
    judged on the full grid's own figure for that configuration."""
    best, full_best = _best(result["board"]), _best(full["board"])
    if best is None or full_best is None:
        return False, "no result"
    if _key(best) == _key(full_best):
        return True, "full best"
    same = next((r for r in full["board"] if _key(r) == _key(best)), None)
    value = (same or best)[METRIC]["mean"]
    rank = f", #{same['rank']}" if same else ""
    ci = full_best[METRIC]["ci"]
    if ci and ci[0] <= value <= ci[1]:
        return True, f"inside ({value:.3f}{rank})"
    return False, f"outside ({value:.3f}{rank})"


def _print(results: list[dict]) -> None:
    full = next((r for r in results if r["label"] == "full grid"), None)
    print(
        f"{'sweep':<12}{'configs':>8}{'cells':>7}{'stopped':>8}{'epochs':>7}{'x full':>7}"
        f"{'GPU-h charged':>14}{'x full':>7}  {'best configuration':<38}"
        f"{METRIC + ' mean [95%]':<24}"
        f"{'vs full best':<21}{'wall s':>7}"
    )
    for r in results:
        best = _best(r["board"])
        ratio = f"{r['gpu_hours'] / full['gpu_hours']:.3f}" if full and full["gpu_hours"] else "-"
        epoch_ratio = f"{r['epochs'] / full['epochs']:.3f}" if full and full["epochs"] else "-"
        verdict = _verdict(r, full)[1] if full else "-"
        print(
            f"{r['label']:<12}{r['configurations']:>8}{r['cells']:>7}{r['stopped']:>8}"
            f"{r['epochs']:>7}{epoch_ratio:>7}{r['gpu_hours']:>14.4f}{ratio:>7}  "
            f"{(_config_text(best) if best else '-'):<38}{(_interval(best) if best else '-'):<24}"
            f"{verdict:<21}{r['wall_s']:>7.0f}"
        )
    if full:
        same = []
        for r in results:
            if r is full:
                continue
            for row in r["board"]:
                twin = next((f for f in full["board"] if _key(f) == _key(row)), None)
                if row[METRIC]["mean"] is not None and twin and twin[METRIC]["n"] == FOLDS:
                    same.append(row[METRIC]["mean"] == twin[METRIC]["mean"])
        if same:
            print(
                f"reproducibility: {sum(same)} of {len(same)} configurations run to the end in "
                "two sweeps have the same mean in both"
            )
    for r in results:
        print(f"  {r['label']}: cells {r['states']}, {r['cells_made']} made")
    fit = _fit([p for r in results for p in r["points"]])
    if fit is not None and fit[1] > 0:
        a, b = fit
        print(
            f"per cell, charged seconds ~ {a:.1f} + {b:.2f} x epochs (least squares over "
            f"{sum(len(r['points']) for r in results)} cells): a cell's fixed cost (process "
            f"start-up, final evaluation or stop) is {a:.1f} s, an epoch {b:.2f} s"
        )
        # The same two costs for every row: what the rows' cells and epochs alone make of the
        # ratio, without the load of the moment each sweep ran in (this VM's cores are shared).
        full = next((r for r in results if r["label"] == "full grid"), None)
        full_cost = a * len(full["points"]) + b * full["epochs"] if full else 0.0
        for r in results:
            fixed = a * len(r["points"])
            share = fixed / (float(r["gpu_hours"]) * 3600) if r["gpu_hours"] else 0.0
            pooled = (
                f"; at these two costs {(fixed + b * r['epochs']) / full_cost:.3f} of the full grid"
                if full_cost
                else ""
            )
            print(
                f"  {r['label']}: {len(r['points'])} cells x {a:.1f} s = {fixed:.0f} s fixed, "
                f"{share:.0%} of its charge{pooled}"
            )


def _dump(path: Path, results: list[dict]) -> None:
    """Per cell: params, state, charged seconds, epoch metrics (to study the rung schedule)."""
    from allocations.models import UsageRecord

    out = []
    for r in results:
        charged = dict(
            UsageRecord.objects.filter(job_id__in=[j.pk for j in r["jobs"]]).values_list(
                "job_id", "gpu_seconds"
            )
        )
        out.append(
            {
                "label": r["label"],
                "gpu_hours": float(r["gpu_hours"]),
                "wall_s": r["wall_s"],
                "schedule": r["sweep"].schedule,
                "cells": [
                    {
                        "index": j.array_index,
                        "params": {
                            k: j.params.get(k)
                            for k in ("model", "lr", "lr_step", "weight_decay", "fold")
                        },
                        "state": j.state,
                        "gpu_seconds": charged.get(j.pk),
                        "stopped_at_epoch": j.stopped_at_epoch,
                        "epochs": (j.progress or {}).get("epoch_metrics")
                        or (j.metrics or {}).get("history"),
                        "train_seconds": ((j.metrics or {}).get("measured") or {}).get(
                            "train_seconds"
                        ),
                    }
                    for j in r["jobs"]
                ],
            }
        )
    path.write_text(json.dumps(out, indent=1, default=str))


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


def _header(machine: str, grid: dict, params: dict, results: list[dict]) -> None:
    from launcher.search.spec import EarlyStopping

    epochs = grid["fixed"]["epochs"]
    rungs = EarlyStopping("asha", ETA, MIN_EPOCHS).rungs(epochs)
    shared = {k: v for k, v in grid["fixed"].items() if k != "epochs"}
    print(f"sweeps on the local backend: {machine}")
    print(
        f"grid: {_configurations(grid)} configurations ({', '.join(grid['models'])}; lr "
        f"{', '.join(f'{x:g}' for x in grid['lrs'])}; weight decay "
        f"{', '.join(f'{x:g}' for x in grid['weight_decays'])}; lr step "
        f"{', '.join(str(x) for x in grid['lr_steps'])}) x {FOLDS} folds, {epochs} epochs; "
        f"synthetic CT n={params['synthetic_n']}, {json.dumps(shared)}; concurrency "
        f"{CONCURRENCY} on {SLOTS} slots, wall time {WALL_TIME_MINUTES} min a cell; ranked by "
        f"{METRIC} (ASHA eta {ETA}: rungs on the validation {METRIC} at epochs "
        f"{', '.join(map(str, rungs))})"
    )
    tpe = next((r for r in results if r["label"].startswith("TPE")), None)
    if tpe is not None:
        spec = tpe["sweep"].grid.get("search", {})
        print(
            f"TPE: trials {spec.get('trials')}, seed {spec.get('seed')}, budget "
            f"{spec.get('gpu_hours')} GPU-hours (ASHA's charge, rounded up)"
        )


def _failures(results: list[dict]) -> list[str]:
    """The issue's targets: ASHA charged at most 1/3 of the full grid, and its best
    configuration the full grid's best or inside its 95% interval."""
    full = next((r for r in results if r["label"] == "full grid"), None)
    asha = next((r for r in results if r["label"].startswith("ASHA")), None)
    if full is None or asha is None:
        return []
    found = []
    ratio = asha["gpu_hours"] / full["gpu_hours"]
    if ratio > Decimal(TARGET_RATIO):
        found.append(f"ASHA was charged {ratio:.3f} of the full grid's GPU-hours (target <= 1/3)")
    good, verdict = _verdict(asha, full)
    if not good:
        found.append(
            f"ASHA's best configuration is neither the full grid's best nor inside its interval "
            f"({verdict})"
        )
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", default="full,asha,tpe", help="which sweeps, in order")
    parser.add_argument("--quick", action="store_true", help="a smoke test: 3 configs, 4 epochs")
    parser.add_argument("--keep", action="store_true", help="keep the temp folder")
    parser.add_argument(
        "--synthetic-n", type=int, default=SYNTHETIC_N, help="images in the synthetic CT set"
    )
    parser.add_argument("--dump", type=Path, help="write every cell's figures to this JSON file")
    args = parser.parse_args()
    rows = [r.strip() for r in args.rows.split(",") if r.strip()]
    # Stopped (SIGTERM): unwind, so the cells still running are killed and the folder goes.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    tmp = Path(tempfile.mkdtemp(prefix="bench-sweeps-"))
    tmp.chmod(0o711)
    _environment(tmp)
    began, machine = time.monotonic(), _machine()
    try:
        user, allocation = _setup()
        grid, params = _grids(args.quick)
        params["synthetic_n"] = args.synthetic_n
        results, errors = _sweeps(rows, user, allocation, grid, params)
        _header(machine, grid, params, results)
        _print(results)
        print(
            f"whole bench: {time.monotonic() - began:.0f} s wall; load average now "
            f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}"
        )
        if args.dump:
            _dump(args.dump, results)
        failures = errors + _failures(results)
        for failure in failures:
            print(f"FAIL: {failure}")
        return 1 if failures else 0
    finally:
        _stop_cells(tmp)
        if "django.db" in sys.modules:
            from django.db import connections

            connections.close_all()
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
