"""Part 2 of bench_throughput.py: sacct records charged into the ledger per second, by P
processes at once.

The path of the Slurm usage ingest (launcher/services/accounting.py, `usage_ingest`): the
backend's `usage` reads `sacct --parsable2` over SSH (`SlurmClient.usage_since`: the text less
notebook jobs, `without_jobs_named`, then `parse_sacct_usage`), launcher/slurm/usage.py makes
UsageRecords of the rows, each attributed to its job (`usage_records`), and
`usage_ingest_records` stores them through the ledger (`usage_record_many` ->
allocations/ledger.py `ledger_charge`), copies each job's charge onto it and checks the
thresholds. Measured here: all of that but the SSH read. Each batch is sacct text shaped as
bench/bench_sacct.py makes it (`as_parsable2`) for jobs that exist in the database (half still
running, half finished, as a poll may or may not have seen them end).

Each run has fresh allocations (ALLOCATIONS) and RECORDS jobs spread over them, one finished
record a job, offered BATCH records at a time (an allocation's share of one beat's ingest), by P
processes started together:
- own: process k ingests the allocations i with i % P == k (no two lock the same row);
- shared: every allocation's records are dealt round the P processes, which all go through the
  allocations in the same order, so they contend on each allocation's row lock.
With P = 1 the two layouts are the same work: one run is the baseline of both.
Afterwards: usage rows == records, their GPU-seconds and cost equal those generated and the
allocations' ledger columns, each job's charge equals its record, no column drifted from the
records. Child mode: python bench/throughput_ingest.py <batches.json>
"""

from __future__ import annotations

import datetime as dt
import json
import random
import secrets
import subprocess
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FINISHED = ["COMPLETED", "FAILED", "CANCELLED by 1001", "TIMEOUT"]
RATE = Decimal("0.50")


def _world() -> tuple[Any, Any, Any]:
    from django.contrib.auth import get_user_model

    from allocations.models import Facility, Project

    facility = Facility.objects.create(
        slug="bench-ingest", name="Bench ingest", kind="hpc", backend="slurm", gpu_hour_rate=RATE
    )
    user = get_user_model().objects.create(username="bench-ingest")
    project = Project.objects.create(code="BTH-ING-001", title="Ingest", pi=user)
    return facility, project, user


def _data(world, *, run: int, records: int, allocations: int) -> tuple[list[int], list[list[dict]]]:
    """Fresh active allocations with `records` jobs among them, loaded in bulk (as bench_ledger
    loads its rows: the ledger columns rebuilt from them after); returns the allocation ids and
    each allocation's sacct records (bench_sacct's dicts)."""
    from django.utils import timezone

    from allocations.ledger import ledger_rebuild
    from allocations.models import Allocation
    from launcher.models import Job

    facility, project, user = world
    now, rng = timezone.now(), random.Random(run)
    made = Allocation.objects.bulk_create(
        [
            Allocation(
                project=project,
                facility=facility,
                gpu_hours=Decimal(1_000_000),  # no threshold is crossed: the ledger alone
                start_date=now.date(),
                end_date=now.date() + dt.timedelta(days=30),
                status="active",
                activated_at=now - dt.timedelta(days=3),
                account_name=f"bing{run}-{i:02d}",
            )
            for i in range(allocations)
        ]
    )
    base, start = (run + 1) * 1_000_000, int(now.timestamp()) - 2 * 86400
    jobs = Job.objects.bulk_create(
        [
            Job(
                allocation=made[k % allocations],
                created_by=user,
                gpus=1 + k % 2,
                wall_time_minutes=60,
                estimate_gpu_hours=Decimal(1 + k % 2),
                estimate_cost=RATE * (1 + k % 2),
                token=f"portal-job-{secrets.token_hex(8)}",
                state="running" if k % 4 < 2 else "succeeded",
                scheduler_id=str(base + k),
                submitted_at=now - dt.timedelta(days=2),
            )
            for k in range(records)
        ],
        batch_size=5000,
    )
    ledger_rebuild(allocation_ids=[a.pk for a in made])
    per: list[list[dict]] = [[] for _ in made]
    for k, job in enumerate(jobs):
        elapsed = rng.randint(60, 3600)
        per[k % allocations].append(
            {
                "job_id": int(job.scheduler_id),
                "array_job_id": int(job.scheduler_id),
                "task": None,
                "account": made[k % allocations].account_name,
                "state": rng.choice(FINISHED),
                "elapsed": elapsed,
                "gpus": job.gpus,
                "start": start + k,
                "end": start + k + elapsed,
                "name": job.token,
            }
        )
    return [a.pk for a in made], per


def _layout(ids: list[int], per: list[list[dict]], *, p: int, shared: bool, batch: int):
    """Each process's batches: [(allocation id, sacct --parsable2 text)]."""
    from bench_sacct import as_parsable2

    shares: list[list[tuple[int, str]]] = [[] for _ in range(p)]
    for i, (pk, recs) in enumerate(zip(ids, per)):
        for k in range(p) if shared else [i % p]:
            mine = recs[k::p] if shared else recs
            for at in range(0, len(mine), batch):
                shares[k].append((pk, as_parsable2(mine[at : at + batch])))
    return shares


def _ingest(shares: list[list[tuple[int, str]]]) -> tuple[float, int]:
    """Start one child a share, let them go together; the wall time from the first start to
    the last end, and the records they offered."""
    with tempfile.TemporaryDirectory() as tmp:
        children = []
        for k, share in enumerate(shares):
            path = Path(tmp) / f"share-{k}.json"
            path.write_text(json.dumps(share))
            children.append(
                subprocess.Popen(
                    [sys.executable, __file__, str(path)],
                    cwd=ROOT,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    text=True,
                )
            )
        for child in children:
            if child.stdout.readline().strip() != "ready":
                raise RuntimeError("an ingest process did not start")
        for child in children:
            child.stdin.write("go\n")
            child.stdin.flush()
        results = []
        for child in children:
            out, _ = child.communicate(timeout=600)
            if child.returncode != 0:
                raise RuntimeError(f"an ingest process failed ({child.returncode})")
            results.append(json.loads(out.strip().splitlines()[-1]))
    wall = max(r["end"] for r in results) - min(r["start"] for r in results)
    return wall, sum(r["records"] for r in results)


def _check(ids: list[int], per: list[list[dict]]) -> dict[str, Any]:
    """Each record charged exactly once, and the sums where the ledger keeps them."""
    from django.db.models import Count, Q, Sum

    from allocations.ledger import ledger_recomputed, ledger_stored
    from allocations.models import Allocation, UsageRecord
    from launcher.models import Job

    recs = [r for rs in per for r in rs]
    seconds = sum(r["elapsed"] * r["gpus"] for r in recs)
    cost = sum(
        (Decimal(r["elapsed"] * r["gpus"]) / 3600 * RATE).quantize(Decimal("0.0001")) for r in recs
    )
    usage = UsageRecord.objects.filter(allocation_id__in=ids).aggregate(
        n=Count("pk"), s=Sum("gpu_seconds"), c=Sum("cost"), loose=Count("pk", filter=Q(job_id=None))
    )
    columns = Allocation.objects.filter(pk__in=ids).aggregate(
        s=Sum("gpu_seconds_used"), c=Sum("spend")
    )
    jobs = Job.objects.filter(allocation_id__in=ids).aggregate(s=Sum("gpu_seconds"))
    stored, recomputed = ledger_stored(allocation_ids=ids), ledger_recomputed(allocation_ids=ids)
    checks = {
        "rows == records": usage["n"] == len(recs),
        "GPU-seconds": usage["s"] == columns["s"] == jobs["s"] == seconds,
        "cost": usage["c"] == columns["c"] == cost,
        "attributed": usage["loose"] == 0,
        "no drift": all(stored[pk] == recomputed.get(pk) for pk in ids),
    }
    return {
        "rows": usage["n"],
        "ok": all(checks.values()),
        "failed": [k for k, v in checks.items() if not v],
    }


def run(*, processes: list[int], records: int, allocations: int, batch: int) -> list[dict]:
    world = _world()
    plan = [("own", p) for p in processes] + [("shared", p) for p in processes if p > 1]
    rows = []
    for run_no, (layout, p) in enumerate(plan):
        ids, per = _data(world, run=run_no, records=records, allocations=allocations)
        shares = _layout(ids, per, p=p, shared=layout == "shared", batch=batch)
        wall, offered = _ingest(shares)
        row = {"layout": layout, "p": p, "records": offered, "seconds": wall, **_check(ids, per)}
        row["per_s"] = offered / wall
        rows.append(row)
        print(
            f"ingest {layout} P={p}: {offered:,} records in {wall:.2f} s, "
            f"{row['per_s']:,.0f}/s, checks {'ok' if row['ok'] else row['failed']}",
            flush=True,
        )
    return rows


def child(path: str) -> None:
    """One ingesting process: its batches, through the ingest's own code, on a signal."""
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from allocations.models import Allocation
    from launcher.services import usage_ingest_records
    from launcher.slurm.client import NOTEBOOK_JOB_PREFIX
    from launcher.slurm.parse import parse_sacct_usage, without_jobs_named
    from launcher.slurm.usage import usage_records

    share = json.loads(Path(path).read_text())
    allocations = Allocation.objects.select_related("facility").in_bulk({pk for pk, _ in share})
    print("ready", flush=True)
    sys.stdin.readline()
    start, offered = time.time(), 0
    for pk, text in share:
        allocation = allocations[pk]
        rows = parse_sacct_usage(without_jobs_named(text, NOTEBOOK_JOB_PREFIX))
        offered += usage_ingest_records(
            allocation=allocation, records=usage_records(allocation=allocation, rows=rows)
        )
    print(json.dumps({"start": start, "end": time.time(), "records": offered}), flush=True)


if __name__ == "__main__":
    child(sys.argv[1])
