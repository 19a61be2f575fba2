"""The report of bench_sweeps.py: the header (machine, grid, ASHA's rungs, TPE's budget), the
table of the sweeps against the full grid (best configuration, its interval, the verdict), the
least-squares split of every cell's charge into a fixed cost and a cost per epoch, the bench's
targets that failed, and the per-cell JSON dump.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

from bench.sweeps_world import (
    CONCURRENCY,
    ETA,
    FOLDS,
    METRIC,
    MIN_EPOCHS,
    SLOTS,
    TARGET_RATIO,
    WALL_TIME_MINUTES,
    _configurations,
)


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
