"""The README's default job and default sweep on `make run`'s `local` facility, measured the
way the README runs them (issue 22, "done means": the default job's estimate within 2x of its
charge; the figures of the default job and sweep: estimate, reservation, charge).

A portal on the embedded defaults (SQLite, the filesystem Celery transport, a real
`celery worker -B`, runserver on port 8103 or BENCH_PORT) in a throwaway var folder; the
researcher's trial on `local` as the README's browser step 1 makes it (the trial cap, `local`'s
one node type `local-cpu`); then the README's API block, verbatim in bash (only
`localhost:8000` replaced): the default job and the default sweep (2 learning rates x 3 folds).
The allocation's reservation is read right after the launches; each run is followed to its end
and the beat's usage ingestion, then the estimate, reservation and charge are printed.
Long: the job and 6 sweep cells train one after another on `local`'s one slot.

Run: python bench/bench_readme_defaults.py
"""

from __future__ import annotations

import datetime as dt
import os
import re
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path

import bench_launch_running as common

ROOT = Path(__file__).resolve().parent.parent
common.PORT = int(os.environ.get("BENCH_PORT", "8103"))
common.BASE = f"http://127.0.0.1:{common.PORT}/api/v1"
call, until = common.call, common.until


def api_block() -> str:
    text = (ROOT / "README.md").read_text()
    blocks = [
        b for b in re.findall(r"```sh\n(.*?)```", text, re.S) if "localhost:8000/api/v1/" in b
    ]
    return blocks[0]


def main() -> int:
    with common.demo_portal("bench-readme-defaults-"):
        return _measure()


def _measure() -> int:
    t0 = time.monotonic()
    token = call("POST", "/auth/token/", body={"username": "researcher", "password": "demo"})[
        "token"
    ]
    local = call("GET", "/facilities/local/", token)
    project = call("GET", "/projects/", token)["results"][0]["id"]
    today = dt.date.today()
    call(
        "POST",
        "/requests/",
        token,
        {  # what the README's trial form pre-fills
            "project": project,
            "facility": "local",
            "kind": "trial",
            "gpu_hours": local["trial_gpu_hours_cap"],
            "node_type": "local-cpu",
            "start_date": today.isoformat(),
            "end_date": (today + dt.timedelta(days=local["trial_days"])).isoformat(),
            "data_sensitivity": "public",
            "justification": "The README's loop.",
            "submit": True,
        },
    )
    until(
        lambda: call("GET", "/allocations/1/", token).get("status") == "active",
        120,
        "allocation 1 active",
        interval=0.5,
    )
    script = "set -euo pipefail\n" + api_block().replace(
        "localhost:8000", f"127.0.0.1:{common.PORT}"
    )
    subprocess.run(["bash", "-c", script], check=True, stdout=subprocess.DEVNULL, timeout=120)
    reserved = call("GET", "/allocations/1/", token)
    job, sweep = call("GET", "/jobs/1/", token), call("GET", "/sweeps/1/", token)
    print(
        f"launched at {time.monotonic() - t0:.0f} s: allocation reserves "
        f"{reserved['gpu_hours_reserved']} GPU-h ({reserved['gpu_seconds_reserved']} GPU-s); "
        f"job estimate {job['estimate_gpu_hours']} ({job['estimate_source']}, wall time "
        f"{job['wall_time_minutes']} min), sweep estimate {sweep['estimate_gpu_hours']} "
        f"for {sweep['size']} cells",
        flush=True,
    )
    final = ("succeeded", "failed", "cancelled", "timeout")
    jobs = until(
        lambda: (
            (rows := [call("GET", f"/jobs/{i}/", token) for i in range(1, 8)])
            and all(r["state"] in final for r in rows)
            and rows
        ),
        4 * 3600,
        "every run to end",
        interval=10,
    )
    until(
        lambda: all(call("GET", f"/jobs/{r['id']}/", token)["gpu_seconds"] for r in jobs),
        300,
        "every run charged",
        interval=2,
    )
    jobs = [call("GET", f"/jobs/{i}/", token) for i in range(1, 8)]
    after = call("GET", "/allocations/1/", token)
    print(
        f"make run's local facility, {os.cpu_count()} CPU cores, all runs ended after "
        f"{time.monotonic() - t0:.0f} s"
    )
    # The prediction (from measured throughput; it sets the default wall time) beside the
    # reservation (the limit, wall time x GPUs) and the charge.
    print(
        f"{'run':<14} {'state':<10} {'predicted GPU-s':>16} {'reserved GPU-h':>15} "
        f"{'charged GPU-s':>14} {'predicted/charge':>17} {'reserved/charge':>16}"
    )

    def predicted_s(r: dict) -> Decimal:
        return Decimal(str(r["predicted_hours"] or 0)) * r["gpus"] * 3600

    for r in jobs:
        name = f"job {r['id']}" if not r["sweep"] else f"sweep cell {r['array_index']}"
        print(
            f"{name:<14} {r['state']:<10} {predicted_s(r):>16.0f} {r['estimate_gpu_hours']:>15} "
            f"{r['gpu_seconds']:>14} {predicted_s(r) / r['gpu_seconds']:>17.2f} "
            f"{Decimal(r['estimate_gpu_hours']) * 3600 / r['gpu_seconds']:>16.2f}"
        )
    cells = [r for r in jobs if r["sweep"]]
    charged = sum(r["gpu_seconds"] for r in cells)
    predicted = sum(predicted_s(r) for r in cells)
    print(
        f"{'sweep (6)':<14} {'':<10} {predicted:>16.0f} {sweep['estimate_gpu_hours']:>15} "
        f"{charged:>14} {predicted / charged:>17.2f} "
        f"{Decimal(sweep['estimate_gpu_hours']) * 3600 / charged:>16.2f}"
    )
    print(
        f"allocation: reserved at launch {reserved['gpu_hours_reserved']} GPU-h, after "
        f"{after['gpu_hours_reserved']}; used {after['gpu_hours_used']} GPU-h of "
        f"{after['gpu_hours']}"
    )
    return 0 if all(r["state"] == "succeeded" for r in jobs) else 1


if __name__ == "__main__":
    sys.exit(main())
