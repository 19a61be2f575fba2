"""Throughput at a national centre's scale (issue: a centre's year), on the PostgreSQL, Redis
and Slurm of `make services`, in one run:

1. Launches per second sustained, with none overspent (bench/throughput_launch.py): gunicorn
   with W sync workers serving `portal.wsgi:application` and a Celery worker of W processes on
   Redis, for W = 1, 2, 4; many clients POST `jobs/` with API tokens across 100 allocations on
   the real Slurm facility (a quarter of them with a grant too small for every launch). Per W:
   accepted launches/s (201), refusals/s (409, not enough hours left), 5xx (must be 0),
   submissions/s by the workers (jobs leaving `queued`, from the database), and allocations
   overspent (charged + reserved > granted, by the ledger's columns and by its records: must be
   0). The Slurm partition is DOWN while the bench launches, so sbatch accepts and every job
   pends (none runs on this machine); every job is cancelled and the partition put back as it
   was, then `sinfo`/`squeue` show the cluster as before.
2. sacct records ingested per second into the ledger (bench/throughput_ingest.py), P = 1, 2, 4
   processes, each on allocations of its own and sharing allocations (row-lock contention);
   every record checked charged exactly once.

Its own database (portal_bench_throughput: created, migrated, dropped) and Redis DB
(BENCH_THROUGHPUT_REDIS_URL, default DB 12: emptied before and after). Needs root (scontrol).
Environment: BENCH_THROUGHPUT_SECONDS (measured period per W, 30), _WARMUP (5), _CLIENTS (16),
_WORKERS (1,2,4), _ALLOCATIONS (100), _PEOPLE (10), _PROCESSES (1,2,4), _RECORDS (a run, 4000),
_INGEST_ALLOCATIONS (20), _BATCH (25), _PARTS (launch,ingest).

    python bench/bench_throughput.py          # make bench-throughput
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DB_NAME = "portal_bench_throughput"
ADMIN_URL = os.environ.get(
    "BENCH_ADMIN_DATABASE_URL", "postgres://portal:portal@127.0.0.1:5432/portal"
)
REDIS_URL = os.environ.get("BENCH_THROUGHPUT_REDIS_URL", "redis://127.0.0.1:6379/12")
SERVICES_ENV = (
    Path(os.environ.get("PORTAL_SERVICES_DIR", "/var/lib/portal-services")) / "services.env"
)
os.environ.update(
    DATABASE_URL=ADMIN_URL.rsplit("/", 1)[0] + f"/{DB_NAME}",
    CELERY_BROKER_URL=REDIS_URL,
    CACHE_URL=REDIS_URL,
    CELERY_TASK_ALWAYS_EAGER="false",
    DEBUG="false",
    EMAIL_URL="locmem://",
    DJANGO_SETTINGS_MODULE="portal.settings",
    SECRET_KEY=os.environ.get("SECRET_KEY") or "bench-only",
)


def _knob(name: str, default: str) -> str:
    return os.environ.get(f"BENCH_THROUGHPUT_{name}", default)


def _ints(name: str, default: str) -> list[int]:
    return [int(v) for v in _knob(name, default).split(",") if v.strip()]


def _db(sql: str) -> None:
    import psycopg

    with psycopg.connect(
        ADMIN_URL.replace("postgres://", "postgresql://"), autocommit=True
    ) as conn:
        conn.execute(sql)


def _services() -> dict[str, str]:
    pairs = (line.split("=", 1) for line in SERVICES_ENV.read_text().splitlines() if "=" in line)
    return {k.strip(): v.strip() for k, v in pairs}


def _ratio(value: float, base: float) -> str:
    return f"{value / base:.2f}x" if base else "-"


def launch_table(rows: list[dict], cluster: dict) -> bool:
    print(
        f"\nLaunches: POST jobs/ across {rows[0]['allocations']} allocations on Slurm, "
        f"{rows[0]['seconds']:.0f} s a W after the warm-up"
    )
    head = (
        "W",
        "accepted/s",
        "refused/s",
        "5xx",
        "submitted/s",
        "overspent",
        "p50 ms",
        "accepted x W=1",
        "submitted x W=1",
    )
    print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    base = rows[0]
    for r in rows:
        cells = (
            r["w"],
            f"{r['accepted_s']:.1f}",
            f"{r['refused_s']:.1f}",
            r["5xx"],
            f"{r['submitted_s']:.2f}",
            f"{r['overspent']} / {r['overspent_records']}",
            f"{r['p50_ms']:.0f}",
            _ratio(r["accepted_s"], base["accepted_s"]),
            _ratio(r["submitted_s"], base["submitted_s"]),
        )
        print("| " + " | ".join(str(c) for c in cells) + " |")
    for r in rows:
        print(
            f"W={r['w']} (load {r['load']:.1f}): {r['jobs']} jobs made ({r['answers_201']} 201s, "
            f"{r['unanswered']} requests unanswered), {r['submitted']} "
            f"submitted, {r['failed']} failed, {r['queued_left']} still queued at the end; "
            f"tight allocations filled to the edge {r['tight_full']}/{r['tight']}; other 4xx "
            f"{r['other_4xx']}; ledger columns drifted {r['drift']}; {r['cancelled']} Slurm jobs "
            f"cancelled; provisioning {r['provision_s']:.1f} s"
        )
    before, after = cluster["before"], cluster["after"]
    print(
        f"cluster before: {before}\ncluster after:  {after} "
        f"({cluster['folders_removed']} staged folders and locks removed)"
    )
    return (
        all(
            r["5xx"] == r["unanswered"] == r["other_4xx"] == 0
            and r["overspent"] == r["overspent_records"] == r["drift"] == r["failed"] == 0
            and r["jobs"] == r["answers_201"]
            for r in rows
        )
        and before["state"] == after["state"]
        and before["sinfo"] == after["sinfo"]
        and after["bench_jobs"] == 0
    )


def ingest_table(rows: list[dict], batch: int) -> bool:
    print(f"\nIngest: sacct records into the ledger, {batch} a call, P processes")
    head = ("layout", "P", "records", "seconds", "records/s", "x P=1", "charged once")
    print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    base = next(r for r in rows if r["p"] == min(x["p"] for x in rows))
    for r in rows:
        cells = (
            r["layout"],
            r["p"],
            f"{r['records']:,}",
            f"{r['seconds']:.2f}",
            f"{r['per_s']:,.0f}",
            _ratio(r["per_s"], base["per_s"]),
            "yes" if r["ok"] else f"NO: {', '.join(r['failed'])}",
        )
        print("| " + " | ".join(str(c) for c in cells) + " |")
    return all(r["ok"] for r in rows)


def main() -> int:
    if os.geteuid() != 0:
        sys.exit("bench_throughput needs root: it sets the Slurm partition DOWN and back")
    import throughput_procs as procs

    parts = _knob("PARTS", "launch,ingest").split(",")
    started = time.perf_counter()
    print(
        f"gunicorn {procs.pinned('gunicorn')}, celery {procs.pinned('celery')}; "
        f"load average {os.getloadavg()[0]:.1f} at the start"
    )
    procs.flush_redis(REDIS_URL)
    procs.reset_logs()
    _db(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")
    _db(f"CREATE DATABASE {DB_NAME}")
    ok = True
    try:
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        launch = ingest = None
        if "launch" in parts:
            import throughput_launch

            launch = throughput_launch.run(
                _services(),
                env=dict(os.environ),
                redis_url=REDIS_URL,
                workers=_ints("WORKERS", "1,2,4"),
                n=int(_knob("ALLOCATIONS", "100")),
                people=int(_knob("PEOPLE", "10")),
                clients=int(_knob("CLIENTS", "16")),
                warmup=float(_knob("WARMUP", "5")),
                seconds=float(_knob("SECONDS", "30")),
            )
        if "ingest" in parts:
            import throughput_ingest

            ingest = throughput_ingest.run(
                processes=_ints("PROCESSES", "1,2,4"),
                records=int(_knob("RECORDS", "4000")),
                allocations=int(_knob("INGEST_ALLOCATIONS", "20")),
                batch=int(_knob("BATCH", "25")),
            )
        if launch:
            ok = launch_table(*launch) and ok
        if ingest:
            ok = ingest_table(ingest, int(_knob("BATCH", "25"))) and ok
    finally:
        from django.db import connections

        connections.close_all()
        _db(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")
        procs.flush_redis(REDIS_URL)
    print(
        f"\nwhole bench {time.perf_counter() - started:.0f} s; load average "
        f"{os.getloadavg()[0]:.1f} at the end; {'all checks pass' if ok else 'CHECKS FAILED'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
