"""Portal web performance under gunicorn on PostgreSQL, with 10,000 requests in the database.

Measures p50/p95/p99 and requests/s for the dashboard, a request detail page and
`POST /api/v1/requests/`, sequentially (1 connection) and at concurrency 8, with wrk. The
baseline in the same run is `/healthz` (one `SELECT 1` through the same stack): the ratio says
how much of the framework's floor each page keeps. The comparison with ColdFront is
bench_vs_coldfront.py: both portals in the same run, with the same server, database and data
shape (a figure of ColdFront's from another setup says nothing either way).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

import psycopg
import requests

ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


PORT = int(os.environ.get("BENCH_PORT", "0")) or _free_port()
BASE = f"http://127.0.0.1:{PORT}"
WORKERS = int(os.environ.get("BENCH_GUNICORN_WORKERS", "4"))
DURATION = os.environ.get("BENCH_DURATION", "10s")
N_REQUESTS = 10_000


def bench_db_url() -> str:
    url = urllib.parse.urlparse(
        os.environ.get("DATABASE_URL", "postgres://portal:portal@127.0.0.1:5432/portal")
    )
    return url._replace(path="/portal_bench").geturl()


def recreate_database(url: str) -> None:
    parsed = urllib.parse.urlparse(url)
    admin = parsed._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS portal_bench WITH (FORCE)")
        conn.execute("CREATE DATABASE portal_bench")


SEED = r"""
import datetime as dt, random
from decimal import Decimal
from django.contrib.auth import get_user_model
from django.utils import timezone
from allocations.demo import seed_catalogue
from allocations.models import *
random.seed(7)
seed_catalogue()
User = get_user_model()
me = User.objects.create_user("bench", "bench@example.org", "bench-password")
others = [User.objects.create_user(f"u{i}", f"u{i}@example.org", "x") for i in range(20)]
facilities = list(Facility.objects.all())
projects = []
for i in range(100):
    pi = others[i % 20]
    p = Project.objects.create(code=f"BEN-{i:04d}", title=f"Project {i}", research_area="AI",
                               pi=pi, pi_name="P I", pi_email="pi@example.org")
    ProjectMembership.objects.create(project=p, user=pi, role="pi")
    if i < 10:
        ProjectMembership.objects.create(project=p, user=me, role="member")
    projects.append(p)
today = timezone.localdate()
statuses = ["draft", "submitted", "approved", "rejected", "changes_requested", "withdrawn"]
rows = []
for i in range(N_REQUESTS):
    p = projects[i % 100]
    rows.append(AllocationRequest(project=p, facility=facilities[i % len(facilities)],
        kind="full", purpose="new", gpu_hours=100 + i % 900, start_date=today,
        end_date=today + dt.timedelta(days=90), data_sensitivity="public",
        justification="Benchmark request " + "word " * 30, status=statuses[i % 6],
        requested_by=me if i % 10 == 0 else p.pi, submitted_at=timezone.now()))
AllocationRequest.objects.bulk_create(rows, batch_size=2000)
allocs = [Allocation(project=projects[i % 100], facility=facilities[i % len(facilities)],
          gpu_hours=Decimal(1000), start_date=today, end_date=today + dt.timedelta(days=90),
          status="active") for i in range(300)]
Allocation.objects.bulk_create(allocs)
now = timezone.now()
UsageRecord.objects.bulk_create([UsageRecord(allocation=a, source="slurm",
    external_id=f"{a.pk}.{j}", period_start=now - dt.timedelta(days=j), period_end=now,
    gpu_seconds=3600 * (1 + j)) for a in Allocation.objects.all() for j in range(10)],
    batch_size=2000)
from allocations.ledger import ledger_rebuild
ledger_rebuild()  # the ledger columns of rows loaded around the services
from django.db import connection
with connection.cursor() as cursor:
    cursor.execute("ANALYZE")  # as autovacuum would after a bulk load
req = AllocationRequest.objects.filter(project__memberships__user=me).order_by("-id").first()
print("DETAIL", req.pk, "PROJECT", projects[0].pk)
""".replace("N_REQUESTS", str(N_REQUESTS))


def run(cmd: list[str], env: dict) -> str:
    result = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{' '.join(cmd[:3])} failed:\n{result.stdout}\n{result.stderr}")
    return result.stdout


def start_gunicorn(env: dict) -> subprocess.Popen:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "portal.wsgi:application",
            "--bind",
            f"127.0.0.1:{PORT}",
            "--workers",
            str(WORKERS),
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=env,
        start_new_session=True,
    )
    for _ in range(100):
        if proc.poll() is not None:
            sys.exit("gunicorn exited during start-up")
        try:
            if requests.get(f"{BASE}/healthz", timeout=10).ok:
                return proc
        except (requests.ConnectionError, requests.Timeout):
            time.sleep(0.2)
    proc.kill()
    sys.exit("gunicorn did not start")


def wrk(
    path: str,
    connections: int,
    headers: dict,
    script: str = "wrk_report.lua",
    env_extra: dict | None = None,
) -> dict:
    cmd = [
        "wrk",
        "-t",
        str(min(connections, 2)),
        "-c",
        str(connections),
        "-d",
        DURATION,
        "-s",
        str(ROOT / "bench" / script),
    ]
    for key, value in headers.items():
        cmd += ["-H", f"{key}: {value}"]
    env = {
        **os.environ,
        "BENCH_REPORT_LUA": str(ROOT / "bench" / "wrk_report.lua"),
        **(env_extra or {}),
    }
    out = subprocess.run(cmd + [BASE + path], capture_output=True, text=True, env=env).stdout
    match = re.search(r"RESULT (.*)", out)
    if not match:
        sys.exit(f"wrk gave no result for {path}:\n{out}")
    return {k: float(v) for k, v in (kv.split("=") for kv in match.group(1).split())}


def main() -> None:
    if not shutil.which("wrk"):
        sys.exit("wrk is not installed: run `make services` (it installs wrk)")
    url = bench_db_url()
    recreate_database(url)
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "DEBUG": "false",
        "SECRET_KEY": "bench",
        "EMAIL_URL": "dummy://",
        "CELERY_TASK_ALWAYS_EAGER": "true",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "DB_CONN_MAX_AGE": "600",
    }
    run([sys.executable, "manage.py", "migrate", "--noinput", "-v0"], env)
    ids = run([sys.executable, "manage.py", "shell", "-c", SEED], env)
    detail_id, project_id = re.search(r"DETAIL (\d+) PROJECT (\d+)", ids).groups()
    server = start_gunicorn(env)
    try:
        session = requests.Session()
        login = session.get(f"{BASE}/accounts/login/")
        session.post(
            f"{BASE}/accounts/login/",
            data={
                "username": "bench",
                "password": "bench-password",
                "csrfmiddlewaretoken": session.cookies["csrftoken"],
            },
            headers={"Referer": login.url},
        )
        cookie = "; ".join(f"{k}={v}" for k, v in session.cookies.items())
        token = session.post(
            f"{BASE}/api/v1/auth/token/", json={"username": "bench", "password": "bench-password"}
        ).json()["token"]
        today = time.strftime("%Y-%m-%d")
        body = json.dumps(
            {
                "project": int(project_id),
                "facility": "jade2",
                "gpu_hours": 100,
                "start_date": today,
                "end_date": "2027-03-01",
                "justification": "Benchmark " + "word " * 30,
            }
        )
        targets = [
            ("healthz (baseline)", "/healthz", {}, "wrk_report.lua", None),
            ("dashboard", "/", {"Cookie": cookie}, "wrk_report.lua", None),
            (
                "request detail",
                f"/requests/{detail_id}/",
                {"Cookie": cookie},
                "wrk_report.lua",
                None,
            ),
            (
                "POST requests/",
                "/api/v1/requests/",
                {},
                "wrk_post.lua",
                {"BENCH_BODY": body, "BENCH_TOKEN": token},
            ),
        ]
        rows = []
        for name, path, headers, script, extra in targets:
            check = session.get(BASE + path) if script == "wrk_report.lua" else None
            if check is not None and check.status_code != 200:
                sys.exit(f"{path} answered {check.status_code}")
            seq = wrk(path, 1, headers, script, extra)
            c8 = wrk(path, 8, headers, script, extra)
            rows.append((name, seq, c8))
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=20)
    report(rows)


def report(rows) -> None:
    base_rps = rows[0][2]["rps"]
    print(
        f"Portal under gunicorn ({WORKERS} workers) on PostgreSQL, {N_REQUESTS:,} requests in "
        f"the database; wrk {DURATION} per cell; latencies in ms"
    )
    print(
        f"{'target':<20}{'seq p50':>9}{'seq p95':>9}{'seq p99':>9}{'seq r/s':>9}"
        f"{'c8 p50':>9}{'c8 p95':>9}{'c8 p99':>9}{'c8 r/s':>9}{'vs base':>9}{'errors':>8}"
    )
    for name, seq, c8 in rows:
        print(
            f"{name:<20}{seq['p50']:>9.2f}{seq['p95']:>9.2f}{seq['p99']:>9.2f}"
            f"{seq['rps']:>9.1f}{c8['p50']:>9.2f}{c8['p95']:>9.2f}{c8['p99']:>9.2f}"
            f"{c8['rps']:>9.1f}{c8['rps'] / base_rps:>9.2f}{int(seq['errors'] + c8['errors']):>8}"
        )


if __name__ == "__main__":
    main()
