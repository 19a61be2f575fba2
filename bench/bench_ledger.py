"""Benchmark: the allocation ledger (granted - charged - reserved, in SQL) and locked launches.

1. `allocation_ledger()` on an allocation with 5,000 unfinished jobs (each with attributed
   charges) and 50,000 usage records: the read every launch makes under the row lock.
2. The allocation list query (`visible_allocations`, with the ledger annotated) over 200
   allocations: one query whatever the rows.
3. Launch throughput under the row lock: 8 threads racing `job_launch` against one allocation
   until its grant is spent (every launch that passes is a reservation; none overspends).

Uses its own database (created, migrated, dropped). Run: python bench/bench_ledger.py
"""

from __future__ import annotations

import os
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DB_NAME = "portal_bench_ledger"
ADMIN_URL = os.environ.get(
    "BENCH_ADMIN_DATABASE_URL", "postgres://portal:portal@127.0.0.1:5432/portal"
)
os.environ["DATABASE_URL"] = f"postgres://portal:portal@127.0.0.1:5432/{DB_NAME}"
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
os.environ.setdefault("SECRET_KEY", "bench-only")
os.environ["CELERY_TASK_ALWAYS_EAGER"] = "true"


def _db(sql: str) -> None:
    import psycopg

    with psycopg.connect(
        ADMIN_URL.replace("postgres://", "postgresql://"), autocommit=True
    ) as conn:
        conn.execute(sql)


def _ms(samples: list[float]) -> str:
    samples = sorted(samples)
    p95 = samples[min(len(samples) - 1, int(len(samples) * 0.95))]
    return f"p50 {statistics.median(samples) * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms"


def main() -> int:
    _db(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")
    _db(f"CREATE DATABASE {DB_NAME}")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    try:
        return _run()
    finally:
        from django.db import connections

        connections.close_all()
        if not os.environ.get("BENCH_KEEP_DB"):
            _db(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")


def _run() -> int:
    import datetime as dt
    from decimal import Decimal

    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from allocations.ledger import ledger_rebuild
    from allocations.models import Allocation, Facility, Project, ProjectMembership, UsageRecord
    from allocations.selectors import allocation_ledger, visible_allocations
    from launcher import services, tasks
    from launcher.models import Job
    from launcher.services import LaunchConflict

    tasks.submit_job.delay = lambda job_id: None  # submission is not measured here
    user = get_user_model().objects.create(username="bench", is_superuser=True)
    facility = Facility.objects.create(
        slug="bench-manual", name="Bench", kind="hpc", backend="local", gpu_hour_rate=Decimal("0.5")
    )
    project = Project.objects.create(code="BEN-CH-001", title="Bench", pi=user)
    ProjectMembership.objects.create(project=project, user=user, role="pi")
    today = timezone.localdate()
    allocations = Allocation.objects.bulk_create(
        [
            Allocation(
                project=project,
                facility=facility,
                gpu_hours=Decimal("100000"),
                start_date=today,
                end_date=today + dt.timedelta(days=30),
                status="active",
            )
            for _ in range(200)
        ]
    )
    big = allocations[0]
    # A CLAIRE-sized sweep still running on one allocation (540 open cells), and on every other
    # allocation 50 jobs, half of them unfinished; each job charged in five records.
    specs = [(big, i, "pending") for i in range(540)]
    specs += [
        (a, i, "running" if i % 2 else "succeeded") for a in allocations[1:] for i in range(50)
    ]
    jobs = Job.objects.bulk_create(
        [
            Job(
                allocation=a,
                created_by=user,
                gpus=1,
                wall_time_minutes=60,
                estimate_gpu_hours=Decimal("1"),
                estimate_cost=Decimal("0.5"),
                token=f"b{a.pk}-{i}",
                state=state,
            )
            for a, i, state in specs
        ],
        batch_size=5000,
    )
    start = timezone.now()
    UsageRecord.objects.bulk_create(
        [
            UsageRecord(
                allocation_id=job.allocation_id,
                source="local",
                external_id=f"u{job.pk}-{k}",
                period_start=start,
                period_end=start,
                gpu_seconds=120,
                cost=Decimal("0.0167"),
                job_id=job.pk,
            )
            for job in jobs
            for k in range(5)
        ],
        batch_size=5000,
    )
    ledger_rebuild()  # the ledger columns of rows loaded around the services
    connection.cursor().execute("ANALYZE")
    if os.environ.get("BENCH_EXPLAIN"):
        print(visible_allocations(user).explain(analyze=True))

    times = []
    for _ in range(30):
        t0 = time.perf_counter()
        ledger = allocation_ledger(big.pk)
        times.append(time.perf_counter() - t0)
    print(
        f"allocation_ledger (540 open jobs, 2,700 records): {_ms(times)}; "
        f"used {ledger.gpu_seconds_used} s, reserved {ledger.gpu_seconds_reserved} s"
    )

    times = []
    for _ in range(20):
        with CaptureQueriesContext(connection) as queries:
            t0 = time.perf_counter()
            rows = list(visible_allocations(user))
            times.append(time.perf_counter() - t0)
    print(
        f"allocation list with ledger, {len(rows)} allocations, {len(jobs)} jobs, "
        f"{len(jobs) * 5} records: {_ms(times)}, {len(queries)} queries"
    )

    target = allocations[1]
    Allocation.objects.filter(pk=target.pk).update(gpu_hours=Decimal("200"))
    target.refresh_from_db()
    already = allocation_ledger(target.pk)
    room = int((already.gpu_seconds_remaining) // 3600)
    barrier, accepted, refused, lock = threading.Barrier(8), [], [], threading.Lock()

    def launcher() -> None:
        barrier.wait()
        while True:
            t0 = time.perf_counter()
            try:
                services.job_launch(
                    by=user,
                    allocation=target,
                    gpus=1,
                    wall_time_minutes=60,
                    params={"model": "resnet18"},
                )
            except LaunchConflict:
                with lock:
                    refused.append(time.perf_counter() - t0)
                break
            with lock:
                accepted.append(time.perf_counter() - t0)
        connection.close()

    threads = [threading.Thread(target=launcher) for _ in range(8)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    ledger = allocation_ledger(target.pk)
    print(
        f"8 threads racing job_launch for the {room} GPU-hours left (1 each): {len(accepted)} accepted, "
        f"{len(refused)} refused, {len(accepted) / wall:.0f} launches/s, latency "
        f"{_ms(accepted)}; reserved {ledger.gpu_hours_reserved} of {target.gpu_hours} GPU-hours "
        f"less {ledger.gpu_hours_used} used"
    )
    return 0 if len(accepted) == room and ledger.gpu_seconds_remaining < 3600 else 1


if __name__ == "__main__":
    sys.exit(main())
