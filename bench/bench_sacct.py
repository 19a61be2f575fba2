"""Benchmark: turning 100,000 sacct job records into usage rows.

Compares the backend's parser of `sacct --parsable2` output (what `SlurmClient.usage_since`
reads) with the naive route of asking `sacct --json` and walking the decoded JSON. Both inputs
are synthetic but shaped like Slurm 22.05's output on the test cluster (see the captured lines
in tests/launcher/test_slurm_parse.py). Run: python bench/bench_sacct.py [N]
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from launcher.slurm.parse import parse_sacct_usage  # noqa: E402

STATES = ["COMPLETED", "FAILED", "CANCELLED by 1001", "TIMEOUT", "RUNNING"]


def synthetic_records(n: int, seed: int = 5) -> list[dict]:
    rng = random.Random(seed)
    start = 1795300000
    records = []
    for i in range(n):
        array_task = i % 10 if i % 3 == 0 else None
        elapsed = rng.randint(1, 86400)
        records.append(
            {
                "job_id": 100000 + i,
                "array_job_id": 100000 + i - (i % 10),
                "task": array_task,
                "account": f"alloc{i % 97:04d}",
                "state": rng.choice(STATES),
                "elapsed": elapsed,
                "gpus": rng.choice([0, 1, 2, 4, 8]),
                "start": start + i,
                "end": start + i + elapsed,
                "name": f"job-{i}-{rng.getrandbits(32):08x}",
            }
        )
    return records


def as_parsable2(records: list[dict]) -> str:
    def iso(t: int) -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t))

    lines = []
    for r in records:
        jid = f"{r['array_job_id']}_{r['task']}" if r["task"] is not None else str(r["job_id"])
        tres = (
            f"billing=1,cpu=1,gres/gpu={r['gpus']},node=1"
            if r["gpus"]
            else "billing=1,cpu=1,node=1"
        )
        lines.append(
            f"{jid}|{r['account']}|{r['state']}|{r['elapsed']}|{tres}|{iso(r['start'])}|"
            f"{iso(r['end'])}|{r['name']}"
        )
    return "\n".join(lines) + "\n"


def as_sacct_json(records: list[dict]) -> str:
    """The 22.05 `sacct --json` layout (openapi v0.0.38), trimmed of rarely varying keys."""
    jobs = []
    for r in records:
        alloc = [
            {"type": "cpu", "name": None, "id": 1, "count": 1},
            {"type": "node", "name": None, "id": 4, "count": 1},
            {"type": "billing", "name": None, "id": 5, "count": 1},
        ]
        if r["gpus"]:
            alloc.append({"type": "gres", "name": "gpu", "id": 1001, "count": r["gpus"]})
        time_block = {
            "elapsed": r["elapsed"],
            "eligible": r["start"],
            "end": r["end"],
            "start": r["start"],
            "submission": r["start"],
            "suspended": 0,
            "limit": 60,
            "system": {"seconds": 0, "microseconds": 0},
            "total": {"seconds": 0, "microseconds": 0},
            "user": {"seconds": 0, "microseconds": 0},
        }
        jobs.append(
            {
                "account": r["account"],
                "comment": {"administrator": None, "job": None},
                "array": {
                    "job_id": r["array_job_id"] if r["task"] is not None else 0,
                    "limits": {"max": {"running": {"tasks": 0}}},
                    "task": None,
                    "task_id": r["task"],
                },
                "association": {
                    "account": r["account"],
                    "cluster": "portal",
                    "partition": None,
                    "user": "portal",
                },
                "cluster": "portal",
                "exit_code": {"status": "SUCCESS", "return_code": 0},
                "job_id": r["job_id"],
                "name": r["name"],
                "partition": "gpu",
                "priority": 1,
                "qos": "normal",
                "state": {"current": r["state"].split()[0], "reason": "None"},
                "time": time_block,
                "tres": {"allocated": alloc, "requested": alloc},
                "user": "portal",
                "working_directory": "/home/portal",
                "steps": [
                    {
                        "step": {"id": "batch", "name": "batch"},
                        "time": dict(time_block),
                        "tres": {"allocated": alloc},
                        "state": r["state"].split()[0],
                    }
                ],
            }
        )
    return json.dumps({"meta": {"plugin": {"type": "openapi/v0.0.38"}}, "errors": [], "jobs": jobs})


def naive_json_rows(text: str) -> list[tuple[str, str, int, int]]:
    """The baseline: decode the whole document, then walk it."""
    rows = []
    for job in json.loads(text)["jobs"]:
        task = job["array"]["task_id"]
        jid = f"{job['array']['job_id']}_{task}" if task is not None else str(job["job_id"])
        gpus = sum(
            t["count"]
            for t in job["tres"]["allocated"]
            if t["type"] == "gres" and t["name"] == "gpu"
        )
        rows.append((jid, job["account"], job["time"]["elapsed"], gpus))
    return rows


def best_of(fn, arg, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(arg)
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    records = synthetic_records(n)
    parsable, as_json = as_parsable2(records), as_sacct_json(records)
    ours = parse_sacct_usage(parsable)
    naive = naive_json_rows(as_json)
    assert len(ours) == len(naive) == n
    assert sum(r.gpu_seconds for r in ours) == sum(e * g for _, _, e, g in naive)
    t_ours, t_naive = best_of(parse_sacct_usage, parsable), best_of(naive_json_rows, as_json)
    print(f"sacct ingestion, {n:,} job records (best of 3, this machine)")
    print(f"{'method':<44}{'input MB':>10}{'seconds':>10}{'records/s':>12}")
    for label, size, secs in (
        ("backend: parse_sacct_usage(--parsable2)", len(parsable), t_ours),
        ("baseline: json.loads(sacct --json) + walk", len(as_json), t_naive),
    ):
        print(f"{label:<44}{size / 1e6:>10.1f}{secs:>10.3f}{n / secs:>12,.0f}")
    print(f"ratio baseline/backend: {t_naive / t_ours:.2f}x  (aim: backend under 30 s)")


if __name__ == "__main__":
    main()
