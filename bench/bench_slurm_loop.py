"""Benchmark: the launcher's loop on the local Slurm cluster, with a real Celery worker.

1. request submitted -> allocation active: a trial on an auto-approving Slurm facility is
   approved on submit, the worker creates the capped Slurm account over SSH, the allocation
   becomes active. Baseline: one bare `sacctmgr show assoc` SSH round trip.
2. job submitted -> running: POST-equivalent `job_launch`, the worker stages and sbatches it as
   the member's cluster login (`sudo -n -u <login> sbatch`), the monitor (polled at 0.25 s here;
   the beat runs every 10 s) sees it running. Baseline: a bare `sudo -n -u <login> sbatch --wrap`
   + `squeue` poll over the same SSH connection.
3. sacct ingestion: 100,000 synthetic `sacct -P` rows (the shape `usage_since` parses) through
   the parser and the real ingestion service (`usage_ingest_records`: bulk UsageRecords, job
   charges, thresholds). Baseline: a naive per-row `UsageRecord.objects.create` loop on 2,000
   rows, extrapolated to 100,000.

The researcher's cluster login is the cluster's first member login (SLURM_MEMBERS in
services.env, `make services`: slurm-alice), never the service account (SSH_USER), which the
portal refuses as a member's login. Uses its own database (created, migrated, dropped) and its
own Celery queue on Redis, and removes the Slurm accounts and job folders it made.
Run: python bench/bench_slurm_loop.py
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DB_NAME = "portal_bench_launch"
ADMIN_URL = os.environ.get(
    "BENCH_ADMIN_DATABASE_URL", "postgres://portal:portal@127.0.0.1:5432/portal"
)
os.environ["DATABASE_URL"] = f"postgres://portal:portal@127.0.0.1:5432/{DB_NAME}"
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
os.environ.setdefault("SECRET_KEY", "bench-only")
os.environ.setdefault("CELERY_BROKER_URL", "redis://127.0.0.1:6379/0")
os.environ["CELERY_TASK_ALWAYS_EAGER"] = "false"
SERVICES_ENV = (
    Path(os.environ.get("PORTAL_SERVICES_DIR", "/var/lib/portal-services")) / "services.env"
)
QUEUE = f"bench-launch-{uuid.uuid4().hex[:8]}"  # our own queue: other runs share this Redis
REPEATS = 3
N_ROWS, N_NAIVE = 100_000, 2_000


def _db(sql: str) -> None:
    import psycopg

    with psycopg.connect(
        ADMIN_URL.replace("postgres://", "postgresql://"), autocommit=True
    ) as conn:
        conn.execute(sql)


def _wait(check, *, timeout: float = 120.0, every: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(every)
    raise RuntimeError("timed out")


def _env() -> dict[str, str]:
    pairs = (line.split("=", 1) for line in SERVICES_ENV.read_text().splitlines() if "=" in line)
    return {k.strip(): v.strip() for k, v in pairs}


def _member(env: dict[str, str]) -> str:
    """The member login the researcher's work runs as: the first of SLURM_MEMBERS."""
    logins = [m.strip() for m in env.get("SLURM_MEMBERS", "").split(",") if m.strip()]
    if not logins or logins[0] == env["SSH_USER"]:
        raise RuntimeError(
            f"{SERVICES_ENV} names no member login (SLURM_MEMBERS) other than the "
            "service account: run `make services` first"
        )
    return logins[0]


def _worker():
    """A real `celery worker` on our own queue, pointed at the bench database."""
    from portal.celery import app

    name = f"{QUEUE}@%h"
    log = open(ROOT / "var" / "bench-slurm-worker.log", "w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "portal",
            "worker",
            "--pool",
            "solo",
            "-Q",
            QUEUE,
            "-n",
            name,
            "--without-gossip",
            "--without-mingle",
            "--loglevel",
            "WARNING",
        ],
        cwd=ROOT,
        env={**os.environ},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    host = os.uname().nodename
    _wait(
        lambda: (
            proc.poll() is not None
            or app.control.ping(destination=[f"{QUEUE}@{host}"], timeout=0.5)
        ),
        timeout=90,
    )
    if proc.poll() is not None:
        raise RuntimeError("worker did not start; see var/bench-slurm-worker.log")
    return proc


def _setup():
    import django
    from django.core.management import call_command

    _db(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")
    _db(f"CREATE DATABASE {DB_NAME}")
    django.setup()
    from portal.celery import app

    app.conf.task_always_eager = False
    app.conf.task_default_queue = QUEUE
    call_command("migrate", verbosity=0)


def _facility(env):
    from decimal import Decimal

    from allocations.models import Facility

    py = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    return Facility.objects.create(
        slug="bench-slurm",
        name="Bench Slurm",
        kind="hpc",
        backend="slurm",
        trial_auto_approve=True,
        gpu_hour_rate=Decimal("0.50"),
        trial_per_person_per_period=REPEATS,  # each round files one more trial, auto-approved
        backend_settings={
            "host": env["SSH_HOST"],
            "port": int(env["SSH_PORT"]),
            "user": env["SSH_USER"],
            "key_path": env["SSH_KEY_PATH"],
            "host_key": env["SSH_KNOWN_HOSTS"],
            "cluster": env["SLURM_CLUSTER"],
            "partition": env["SLURM_PARTITION"],
            "python": f"/usr/bin/{py}",
            "python_path": str(Path(sys.prefix) / "lib" / py / "site-packages"),
        },
    )


def activation(facility, user, project, made: list) -> tuple[list[float], list[float], list]:
    """request submitted -> allocation active, and the bare sacctmgr round trip; `made`
    collects the allocations as they come (for clean-up, also after a failure)."""
    import datetime as dt

    from django.db import transaction
    from django.utils import timezone

    from allocations import services as alloc_services
    from allocations.models import Allocation, AllocationRequest
    from launcher.slurm import backend as slurm_backend

    backend = slurm_backend.slurm_client(facility)
    loop, base = [], []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        backend.ssh.run(["sacctmgr", "-n", "-P", "show", "assoc", "format=Account,User"])
        base.append(time.perf_counter() - t0)
    for _ in range(REPEATS):
        with transaction.atomic():
            req = alloc_services.request_create(
                by=user,
                project=project,
                facility=facility,
                kind="trial",
                gpu_hours=10,
                start_date=timezone.localdate(),
                end_date=timezone.localdate() + dt.timedelta(days=30),
                justification="Benchmarking the launcher.",
            )
        t0 = time.perf_counter()
        with transaction.atomic():
            alloc_services.request_submit(request=req, by=user)

        def settled(pk=req.pk):
            granted = AllocationRequest.objects.select_related("allocation").get(pk=pk).allocation
            return (
                granted if granted is not None and granted.status in ("active", "failed") else None
            )

        allocation = _wait(settled, timeout=120)
        loop.append(time.perf_counter() - t0)
        made.append(allocation)
        if allocation.status != "active":
            raise RuntimeError(f"activation failed: {allocation.status_reason}")
        Allocation.objects.filter(pk=allocation.pk).update(status="closed")  # one open trial rule
    return loop, base, made


def job_start(allocation, user, login: str) -> tuple[list[float], list[float], list[str]]:
    """job submitted -> running, and a bare sbatch (as the member `login`, as the portal
    submits) + squeue poll; also the portal's job folders, for clean-up."""
    from allocations.models import Allocation
    from launcher import services
    from launcher.models import Job
    from launcher.slurm import backend as slurm_backend

    Allocation.objects.filter(pk=allocation.pk).update(status="active")
    allocation.refresh_from_db()
    backend = slurm_backend.slurm_client(allocation.facility)
    params = {
        "model": "resnet18",
        "epochs": 1,
        "size": 32,
        "synthetic_n": 24,
        "threads": 1,
        "bootstrap": 20,
    }
    loop, base, workdirs = [], [], []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        result = backend.ssh.run(
            [
                "sudo",
                "-n",
                "-u",
                login,
                "sbatch",
                "--parsable",
                f"--account={allocation.account_name}",
                "--gres=gpu:1",
                "--time=2",
                "--chdir=/tmp",
                "--output=/dev/null",
                "--wrap=sleep 5",
            ]
        )
        if not result.ok():
            raise RuntimeError(f"bare sbatch as {login} failed: {result.stderr.strip()}")
        job_id = result.stdout.strip().split(";")[0]
        _wait(
            lambda job_id=job_id: (
                backend.ssh.run(["squeue", "-h", "-j", job_id, "-o", "%T"]).stdout.strip()
                == "RUNNING"
            ),
            timeout=120,
        )
        base.append(time.perf_counter() - t0)
        backend.cancel(job_id)
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        job = services.job_launch(
            by=user, allocation=allocation, gpus=1, wall_time_minutes=3, params=params
        )  # the worker submits it after commit

        def running(job=job):
            services.jobs_poll(facility_id=allocation.facility_id)
            return Job.objects.filter(pk=job.pk, state__in=["running", *Job.FINAL]).exists()

        _wait(running, timeout=120, every=0.25)
        loop.append(time.perf_counter() - t0)
        job.refresh_from_db()
        if job.state not in ("running", "succeeded"):  # ran: the time counts
            raise RuntimeError(f"the job did not run: {job.state} {job.state_reason}")
        if job.workdir:
            workdirs.append(job.workdir)
        services.job_cancel(job=job, by=user)
    return loop, base, workdirs


def ingestion(allocation) -> tuple[float, float, int]:
    """100,000 synthetic sacct rows through the parser and the real ingestion service, and a
    naive per-row create loop on 2,000 rows (extrapolated)."""
    import datetime as dt
    from decimal import Decimal

    from django.db import transaction
    from django.utils import timezone

    from allocations.models import UsageRecord
    from launcher.services.accounting import usage_ingest_records
    from launcher.slurm.parse import parse_sacct_usage
    from launcher.slurm.usage import usage_records

    start = dt.datetime(2026, 1, 1)
    lines = []
    for i in range(N_ROWS):
        jid = f"{500000 + i - i % 10}_{i % 10}" if i % 3 == 0 else str(500000 + i)
        end = start + dt.timedelta(seconds=i + 3600)
        lines.append(
            f"{jid}|{allocation.account_name}|COMPLETED|{3600 - i % 600}|"
            f"billing=1,cpu=1,gres/gpu={1 + i % 2},node=1|{start + dt.timedelta(seconds=i):%Y-%m-%dT%H:%M:%S}|"
            f"{end:%Y-%m-%dT%H:%M:%S}|portal-job-{i:016x}"
        )
    text = "\n".join(lines) + "\n"
    t0 = time.perf_counter()
    offered = usage_ingest_records(
        allocation=allocation,
        records=usage_records(allocation=allocation, rows=parse_sacct_usage(text)),
    )
    service = time.perf_counter() - t0
    stored = UsageRecord.objects.filter(allocation=allocation).count()
    assert offered == stored == N_ROWS, (offered, stored)

    now = timezone.now()
    t0 = time.perf_counter()
    with transaction.atomic():
        for i in range(N_NAIVE):
            UsageRecord.objects.create(
                allocation=allocation,
                source="slurm",
                external_id=f"naive:{i}",
                period_start=now,
                period_end=now,
                gpu_seconds=3600,
                cost=Decimal("0.5"),
            )
    naive = (time.perf_counter() - t0) * N_ROWS / N_NAIVE
    return service, naive, stored


def main() -> int:
    import logging

    env = _env()
    _setup()
    logging.getLogger("paramiko").setLevel(logging.WARNING)
    from django.contrib.auth import get_user_model

    from allocations.models import Project, ProjectMembership
    from launcher.slurm import backend as slurm_backend

    user = get_user_model().objects.create(username="bench-researcher")
    project = Project.objects.create(code="BEN-SLU-001", title="bench", pi=user)
    login = _member(env)
    ProjectMembership.objects.update_or_create(
        project=project, user=user, defaults={"role": "pi", "cluster_username": login}
    )
    facility = _facility(env)
    worker = _worker()
    made: list = []
    workdirs: list[str] = []
    try:
        act, act_base, made = activation(facility, user, project, made)
        start, start_base, workdirs = job_start(made[-1], user, login)
        ingest, naive, rows = ingestion(made[-1])
    finally:
        worker.terminate()
        worker.wait(timeout=30)
        backend = slurm_backend.slurm_client(facility)
        for allocation in made:
            backend.ssh.run(["scancel", f"--account={allocation.account_name}"])
            backend.ssh.run(
                ["sacctmgr", "-i", "delete", "account", f"name={allocation.account_name}"]
            )
        folders = [w for w in workdirs if "/portal-jobs/portal-" in w and ".." not in w]
        locks = [
            f"{w.rsplit('/', 1)[0]}/.{w.rsplit('/', 1)[1].rsplit('-', 1)[0]}.lock" for w in folders
        ]  # the submissions' lock files beside them
        if folders:  # the staged job folders (owned by the service account)
            removed = backend.ssh.run(["rm", "-rf", "--", *folders, *locks])
            if not removed.ok():  # what the member's job made there may be closed to it
                print(
                    f"note: could not remove all of the job folders {folders}: "
                    f"{' '.join(removed.stderr.split())[:300]}",
                    file=sys.stderr,
                )
        backend.ssh.close()
        from django.db import connections

        connections.close_all()
        _db(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")

    med = statistics.median
    table = [
        (
            "request submitted -> allocation active",
            med(act),
            "< 10 s",
            "bare `sacctmgr show assoc` over SSH",
            med(act_base),
        ),
        (
            "job submitted -> running",
            med(start),
            "< 5 s",
            "bare sudo `sbatch --wrap` + `squeue` poll",
            med(start_base),
        ),
        (
            f"sacct ingestion of {rows:,} rows",
            ingest,
            "< 30 s",
            f"per-row create() x {N_NAIVE:,}, extrapolated",
            naive,
        ),
    ]
    print(
        f"{'what':40} {'portal':>9} {'aim':>7}   {'baseline':45} {'baseline s':>10} {'portal/base':>11}"
    )
    for what, value, aim, base_name, base in table:
        print(
            f"{what:40} {value:8.2f}s {aim:>7}   {base_name:45} {base:10.2f} {value / base:10.2f}x"
        )
    print(
        "portal/base: the portal's whole path against the bare scheduler step it wraps (above 1 "
        "is the portal's overhead); for ingestion, below 1 is faster than the naive loop."
    )
    print(
        f"(jobs run as the member login {login}; medians of {REPEATS} for the first two; max activation {max(act):.2f} s, max start {max(start):.2f} s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
