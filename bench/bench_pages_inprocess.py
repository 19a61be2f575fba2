"""In-process page timings: Django's test client against the same data as bench_portal.py.

No server and no load generator: each page is requested N times in a loop through the whole
middleware stack (session, auth, CSRF, templates) and timed with perf_counter; the figures are
the portal's own cost per request, which is what a change to views, queries or templates moves.
Pages: the dashboard (the project list of the ColdFront comparison), an allocation page, a
request detail, the API's allocation list and a request form POST. Uses its own database
(BENCH_DB, default portal_bench_pages: created, migrated, seeded, dropped).

    python bench/bench_pages_inprocess.py            # N=200 per page
"""

from __future__ import annotations

import os
import statistics
import sys
import time
import urllib.parse
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
N = int(os.environ.get("BENCH_N", "200"))
DB = os.environ.get("BENCH_DB", "portal_bench_pages")


def _database() -> str:
    url = urllib.parse.urlparse(
        os.environ.get("DATABASE_URL", "postgres://portal:portal@127.0.0.1:5432/portal")
    )
    admin = url._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {DB}")
    return url._replace(path=f"/{DB}").geturl()


def _drop() -> None:
    url = urllib.parse.urlparse(os.environ["DATABASE_URL"])
    with psycopg.connect(url._replace(path="/postgres").geturl(), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")


def main() -> None:
    os.environ.update(
        {
            "DATABASE_URL": _database(),
            "DEBUG": "false",
            "SECRET_KEY": os.environ.get("SECRET_KEY", "bench"),
            "EMAIL_URL": "locmem://",
            "CELERY_TASK_ALWAYS_EAGER": "true",
            "DJANGO_SETTINGS_MODULE": "portal.settings",
            "DB_CONN_MAX_AGE": "600",
        }
    )
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client

    from bench.bench_portal import N_REQUESTS, SEED

    call_command("migrate", "--noinput", verbosity=0)
    namespace: dict = {}
    exec(SEED.replace("N_REQUESTS", str(N_REQUESTS)), namespace)  # nosec B102 # our seed
    from allocations.models import Allocation, AllocationRequest

    me = namespace["me"]
    allocation = Allocation.objects.filter(project__memberships__user=me).order_by("pk").first()
    detail = AllocationRequest.objects.filter(project__memberships__user=me).order_by("-pk").first()
    project = namespace["projects"][0]
    client = Client()
    assert client.login(username="bench", password="bench-password")
    today = time.strftime("%Y-%m-%d")
    form = {
        "project": project.pk,
        "facility": "jade2",
        "kind": "full",
        "purpose": "new",
        "cpu_hours": 0,
        "gpu_hours": 100,
        "start_date": today,
        "end_date": "2027-03-01",
        "data_sensitivity": "public",
        "justification": "Benchmark " + "word " * 30,
    }
    pages = [
        ("dashboard (project list)", lambda: client.get("/")),
        ("allocation page", lambda: client.get(f"/allocations/{allocation.pk}/")),
        ("request detail", lambda: client.get(f"/requests/{detail.pk}/")),
        ("API allocations", lambda: client.get("/api/v1/allocations/")),
        ("request POST", lambda: client.post("/requests/new/", form)),
    ]
    print(f"In-process, Django test client, N={N} per page after 20 warm-up requests; ms")
    print(f"{'page':<26}{'p50':>8}{'p95':>8}{'mean':>8}{'req/s':>8}")
    for name, request in pages:
        for _ in range(20):
            response = request()
            assert response.status_code in (200, 302), (name, response.status_code)
        times = []
        for _ in range(N):
            start = time.perf_counter()
            request()
            times.append((time.perf_counter() - start) * 1000)
        times.sort()
        mean = statistics.fmean(times)
        print(
            f"{name:<26}{times[N // 2]:>8.2f}{times[int(N * 0.95)]:>8.2f}{mean:>8.2f}"
            f"{1000 / mean:>8.0f}"
        )
    connection.close()
    _drop()


if __name__ == "__main__":
    main()
