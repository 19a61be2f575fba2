"""Benchmark: the usage report at 100,000 usage rows and 10,000 jobs.

The report (portal/reports/selectors.py) aggregates in SQL with a fixed number of queries; the
ratio peer does the same aggregation naively in Python (fetch every row, sum in dicts, sort the
waits for the p90). Both must give the same figures (checked). On PostgreSQL, in its own
database `portal_bench_reports` (dropped and re-created). Run: python bench/bench_reports.py
"""

from __future__ import annotations

import datetime as dt
import math
import os
import random
import sys
import time
import urllib.parse
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
N_USAGE, N_JOBS = 100_000, 10_000


def bench_db_url() -> str:
    url = urllib.parse.urlparse(
        os.environ.get("DATABASE_URL", "postgres://portal:portal@127.0.0.1:5432/portal")
    )
    admin = url._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS portal_bench_reports WITH (FORCE)")
        conn.execute("CREATE DATABASE portal_bench_reports")
    return url._replace(path="/portal_bench_reports").geturl()


def setup_django() -> None:
    os.environ["DATABASE_URL"] = bench_db_url()
    os.environ.setdefault("SECRET_KEY", "bench")
    os.environ["DEBUG"] = "false"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def seed() -> object:
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    from allocations.models import Allocation, Facility, Project, ProjectMembership, UsageRecord
    from launcher.models import Job

    rng = random.Random(11)
    User = get_user_model()
    staff = User.objects.create_user("staff", "staff@example.org", "x", is_superuser=True)
    group, _ = Group.objects.get_or_create(name="reviewers")
    staff.groups.add(group)
    users = [User.objects.create_user(f"u{i}", f"u{i}@example.org", "x") for i in range(60)]
    facilities = [
        Facility.objects.create(
            slug=f"f{i}", name=f"Facility {i}", kind="hpc", gpu_hour_rate=Decimal("1.5") + i
        )
        for i in range(6)
    ]
    projects, allocations = [], []
    for i in range(40):
        pi = users[i % 20]
        project = Project.objects.create(
            code=f"PRJ-{i:04d}",
            title="t",
            research_area="a",
            pi=pi,
            pi_name=pi.username,
            pi_email=pi.email,
        )
        ProjectMembership.objects.create(project=project, user=pi, role="pi")
        for j in range(3):
            ProjectMembership.objects.create(project=project, user=users[20 + (i + j) % 40])
        projects.append(project)
        for k in range(2):
            allocations.append(
                Allocation.objects.create(
                    project=project,
                    facility=facilities[(i + k) % 6],
                    gpu_hours=Decimal(10_000),
                    start_date=dt.date(2025, 1, 1),
                    end_date=dt.date(2026, 12, 31),
                    status="active",
                )
            )
    start = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
    UsageRecord.objects.bulk_create(
        [
            UsageRecord(
                allocation=allocations[n % len(allocations)],
                source="slurm",
                external_id=f"u{n}",
                period_start=start + dt.timedelta(minutes=7 * n),
                period_end=start + dt.timedelta(minutes=7 * n + 5),
                gpu_seconds=rng.randint(60, 36_000),
                cost=Decimal(rng.randint(1, 9_999)) / 100,
            )
            for n in range(N_USAGE)
        ],
        batch_size=5000,
    )
    jobs = []
    for n in range(N_JOBS):
        created = start + dt.timedelta(minutes=70 * n)
        started = created + dt.timedelta(seconds=rng.randint(0, 7200))
        jobs.append(
            Job(
                allocation=allocations[n % len(allocations)],
                created_by=users[20 + n % 40],
                token=f"portal-job-{n}",
                gpus=rng.choice([1, 1, 1, 2, 4, 8]),
                state=rng.choice(["succeeded"] * 8 + ["failed", "timeout"]),
                created_at=created,
                submitted_at=created,
                started_at=started,
                finished_at=started + dt.timedelta(seconds=rng.randint(5, 20_000)),
                gpu_seconds=rng.randint(0, 80_000),
                utilisation_mean=rng.uniform(5, 99),
                utilisation_source="gpu",
            )
        )
    Job.objects.bulk_create(jobs, batch_size=2000)
    from allocations.ledger import ledger_rebuild

    ledger_rebuild()  # the columns and monthly rollups of records loaded around the ledger
    return staff


def naive(group_by: str) -> dict:
    """Every row into Python, then dicts: what a report without SQL aggregation does."""
    from allocations.models import UsageRecord
    from launcher.models import Job

    cells: dict = defaultdict(lambda: [0, Decimal(0), 0])
    for code, when, seconds, cost in UsageRecord.objects.values_list(
        "allocation__project__code", "period_start", "gpu_seconds", "cost"
    ).iterator():
        cell = cells[(code, when.date().replace(day=1))]
        cell[0] += seconds
        cell[1] += cost
    waits = []
    for code, created, submitted, started in Job.objects.values_list(
        "allocation__project__code", "created_at", "submitted_at", "started_at"
    ).iterator():
        cells[(code, created.date().replace(day=1))][2] += 1
        waits.append((started - submitted).total_seconds())
    waits.sort()
    return {
        "cells": dict(cells),
        "mean": sum(waits) / len(waits),
        "p90": waits[math.ceil(0.9 * len(waits)) - 1],
    }


def best_of(fn, repeat: int = 3) -> tuple[float, object]:
    best, result = math.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def main() -> None:
    setup_django()
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from portal.reports.selectors import usage_report

    t0 = time.perf_counter()
    staff = seed()
    print(f"seeded {N_USAGE:,} usage rows and {N_JOBS:,} jobs in {time.perf_counter() - t0:.1f} s")
    with CaptureQueriesContext(connection) as queries:
        usage_report(staff, group_by="project", period="month")
    t_sql, report = best_of(lambda: usage_report(staff, group_by="project", period="month"))
    t_py, peer = best_of(lambda: naive("project"))
    # Same figures both ways.
    for row in report.rows:
        seconds, cost, jobs = peer["cells"][(row["group"], row["period"])]
        assert (row["gpu_seconds"], row["cost"], row["jobs"]) == (seconds, cost, jobs), row
    assert len(report.rows) == len(peer["cells"])
    assert math.isclose(report.wait["mean_seconds"], peer["mean"], rel_tol=1e-9)
    assert report.wait["p90_seconds"] == peer["p90"]
    print(
        f"usage report by project and month: {N_USAGE:,} usage rows, {N_JOBS:,} jobs "
        f"(best of 3, PostgreSQL, this machine)"
    )
    print(f"{'method':<52}{'seconds':>10}{'queries':>10}{'rows out':>10}")
    print(
        f"{'portal: SQL aggregation (usage_report)':<52}{t_sql:>10.3f}{len(queries):>10}"
        f"{len(report.rows):>10}"
    )
    print(
        f"{'baseline: every row into Python, sums in dicts':<52}{t_py:>10.3f}{2:>10}"
        f"{len(peer['cells']):>10}"
    )
    print(f"ratio baseline/portal: {t_py / t_sql:.1f}x (above 1: the SQL report is faster)")


if __name__ == "__main__":
    main()
