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

The parts: bench/sweeps_world.py (the grid, the throwaway portal, the seeded world),
bench/sweeps_run.py (one sweep driven to the end and read back from the ledger; the rows in
order) and bench/sweeps_report.py (the header, the table, the cost split, the targets, the dump).

Run: python bench/bench_sweeps.py [--rows full,asha,tpe] [--synthetic-n N] [--quick] [--keep]
[--dump FILE] (--quick: a 3-minute smoke test of the bench itself, 3 configurations x 4 epochs)
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.sweeps_report import _dump, _failures, _header, _print  # noqa: E402
from bench.sweeps_run import _stop_cells, _sweeps  # noqa: E402
from bench.sweeps_world import SYNTHETIC_N, _environment, _grids, _machine, _setup  # noqa: E402


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
