"""Benchmark: placement's predicted wait and finish against the real ones, over 2 x 20 launches.

On the real Slurm of `make services` with a backlog (both GPUs taken by two of the member's
jobs whose time limit is 2 minutes but which end after 40 s: the scheduler's estimate is a
bound, as on any cluster), a researcher with an allocation there and one on a local facility
(two slots, dearer) makes 20 launches with `"allocation": "auto"` (`job_launch_placed`, what
POST jobs/ does), a few seconds apart, as a scripted submission would. Each job records the
wait and finish placement predicted for it; the monitor (what the beat runs) records when it
really started and ended. The table is the calibration page's (`placement_errors`): per
facility, |predicted - real| wait and finish, median and 90th percentile. Two rounds of the
same: the first with no history (the scheduler's estimate counts the jobs ahead to their time
limits, the local slots count unpredicted jobs to their wall time), the second corrected by
the first (`calibrated`: the median real / predicted wait of the facility's placed jobs).

Baseline, in the same run: a queue-blind launcher (SkyPilot's assumption, and ours before
placement) predicts no wait and a finish at the run time alone; its error on the same jobs is
the real wait, and |run-time-only finish - real finish|. portal/blind below 1 is placement
doing better than ignoring the queue.

Uses its own database (created, migrated, dropped), runs the Celery tasks in process (eager),
and removes the Slurm account and job folders it made. Run: python bench/bench_placement.py
"""

from __future__ import annotations

import datetime as dt
import os
import statistics
import sys
import time
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DB_NAME = "portal_bench_placement"
ADMIN_URL = os.environ.get(
    "BENCH_ADMIN_DATABASE_URL", "postgres://portal:portal@127.0.0.1:5432/portal"
)
os.environ["DATABASE_URL"] = f"postgres://portal:portal@127.0.0.1:5432/{DB_NAME}"
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
os.environ.setdefault("SECRET_KEY", "bench-only")
os.environ["CELERY_TASK_ALWAYS_EAGER"] = "true"
os.environ["CELERY_BROKER_URL"] = "memory://"
os.environ["PORTAL_VAR_DIR"] = str(ROOT / "var" / "bench-placement")
os.environ["PORTAL_LOCAL_RUN_AS_MEMBERS"] = "no"  # the portal's own trainer; no accounts made
SERVICES_ENV = (
    Path(os.environ.get("PORTAL_SERVICES_DIR", "/var/lib/portal-services")) / "services.env"
)
LAUNCHES, APART_S = 20, 3.0
FILLER_SLEEP_S, FILLER_LIMIT_MIN = 40, 2
PARAMS = {"model": "resnet18", "epochs": 2, "size": 32, "synthetic_n": 24, "threads": 1,
          "bootstrap": 50, "progress_every": 1}  # fmt: skip


def _db(sql: str) -> None:
    import psycopg

    with psycopg.connect(
        ADMIN_URL.replace("postgres://", "postgresql://"), autocommit=True
    ) as conn:
        conn.execute(sql)


def _env() -> dict[str, str]:
    pairs = (line.split("=", 1) for line in SERVICES_ENV.read_text().splitlines() if "=" in line)
    return {k.strip(): v.strip() for k, v in pairs}


def _wait(check, *, timeout: float, every: float = 1.0, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(every)
    raise RuntimeError(f"timed out waiting for {what}")


def _setup(env: dict[str, str]):
    """A fresh database; the researcher (cluster login: the first member login), a project,
    an active allocation on each of a Slurm facility and a local one."""
    import django
    from django.core.management import call_command

    _db(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")
    _db(f"CREATE DATABASE {DB_NAME}")
    django.setup()
    call_command("migrate", verbosity=0)
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from allocations.models import Allocation, Facility, Project, ProjectMembership
    from launcher.provisioning import allocation_provision

    login = [m for m in env.get("SLURM_MEMBERS", "").split(",") if m][0]
    user = get_user_model().objects.create(username="bench-researcher")
    project = Project.objects.create(code="BEN-PLA-001", title="bench", pi=user)
    ProjectMembership.objects.update_or_create(
        project=project, user=user, defaults={"role": "pi", "cluster_username": login}
    )
    py = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    slurm = Facility.objects.create(
        slug="bench-slurm", name="Bench Slurm", kind="hpc", backend="slurm",
        gpu_hour_rate=Decimal("0.50"),
        backend_settings={
            "host": env["SSH_HOST"], "port": int(env["SSH_PORT"]), "user": env["SSH_USER"],
            "key_path": env["SSH_KEY_PATH"], "host_key": env["SSH_KNOWN_HOSTS"],
            "cluster": env["SLURM_CLUSTER"], "partition": env["SLURM_PARTITION"],
            "python": f"/usr/bin/{py}",
            "python_path": str(Path(sys.prefix) / "lib" / py / "site-packages"),
        },
    )  # fmt: skip
    local = Facility.objects.create(
        slug="bench-local", name="Bench local", kind="campus", backend="local",
        gpu_hour_rate=Decimal("2.00"), backend_settings={"slots": 2},
    )  # fmt: skip
    today = timezone.localdate()
    made = {}
    for facility, status in ((slurm, "provisioning"), (local, "active")):
        made[facility.backend] = Allocation.objects.create(
            project=project, facility=facility, gpu_hours=Decimal(50), start_date=today,
            end_date=today + dt.timedelta(days=30), status=status,
            account_name=f"bench-pla-{os.getpid()}-{facility.backend}",
        )  # fmt: skip
    made["slurm"] = allocation_provision(allocation_id=made["slurm"].pk)
    if made["slurm"].status != "active":
        raise RuntimeError(f"the Slurm allocation did not activate: {made['slurm'].status_reason}")
    return user, login, made


def _fill(client, login: str, account: str) -> list[str]:
    """Both GPUs taken by two one-GPU jobs of the member, running before this returns."""
    ids = []
    for _ in range(2):
        result = client.ssh.run(
            ["sudo", "-n", "-u", login, "sbatch", "--parsable", f"--account={account}",
             "--gres=gpu:1", f"--time={FILLER_LIMIT_MIN}", "--output=/dev/null", "--chdir=/tmp",
             f"--wrap=sleep {FILLER_SLEEP_S}"]
        )  # fmt: skip
        if not result.ok():
            raise RuntimeError(f"filler sbatch failed: {result.stderr.strip()}")
        ids.append(result.stdout.strip().split(";")[0])
    _wait(
        lambda: (
            client.ssh.run(["squeue", "-h", "-j", ",".join(ids), "-o", "%T"]).stdout.split()
            == ["RUNNING", "RUNNING"]
        ),
        timeout=60,
        every=0.5,
        what="both GPUs to be taken",
    )
    return ids


def _launch_and_follow(user, made) -> list:
    """20 auto launches, then the monitor until every job ended (or 15 minutes)."""
    from launcher import services
    from launcher.models import Job
    from launcher.services import placement as placing

    jobs = []
    for _ in range(LAUNCHES):
        work = placing.Work(params=PARAMS, gpus=1, wall_time_minutes=5)
        jobs.append(placing.job_launch_placed(by=user, work=work).pk)
        for allocation in made.values():
            services.jobs_poll(facility_id=allocation.facility_id)
        time.sleep(APART_S)

    def ended():
        for allocation in made.values():
            services.jobs_poll(facility_id=allocation.facility_id)
        return not Job.objects.filter(pk__in=jobs).exclude(state__in=Job.FINAL).exists()

    _wait(ended, timeout=900, every=1.0, what="the 20 jobs to end")
    return list(Job.objects.filter(pk__in=jobs).select_related("allocation__facility"))


def _blind(jobs) -> dict[str, tuple[list[float], list[float]]]:
    """The queue-blind launcher's errors on the same jobs: wait 0, finish = the run time
    placement predicted (its predicted finish less its predicted wait)."""
    out: dict[str, tuple[list[float], list[float]]] = {}
    for job in jobs:
        if job.started_at is None:
            continue
        waits, ends = out.setdefault(job.allocation.facility.slug, ([], []))
        waits.append(job.real_wait_seconds or 0.0)
        if job.finished_at is not None and job.predicted_finish_at is not None:
            run = (job.predicted_finish_at - job.created_at).total_seconds() - float(
                job.predicted_wait_seconds or 0
            )
            ends.append(abs(run - (job.finished_at - job.created_at).total_seconds()))
    return out


def _print(title: str, jobs) -> None:
    from launcher.placement.accuracy import Measured, placement_errors
    from launcher.placement.interval import percentile

    blind = _blind(jobs)
    measured = [
        Measured(
            facility=j.allocation.facility.slug,
            predicted_wait=float(j.predicted_wait_seconds),
            real_wait=j.real_wait_seconds or 0.0,
            predicted_finish=(j.predicted_finish_at - j.created_at).total_seconds(),
            real_finish=None
            if j.finished_at is None
            else (j.finished_at - j.created_at).total_seconds(),
        )
        for j in jobs
        if j.started_at is not None and j.predicted_wait_seconds is not None
        and j.predicted_finish_at is not None
    ]  # fmt: skip
    placed = ", ".join(
        f"{slug} {sum(j.allocation.facility.slug == slug for j in jobs)}" for slug in sorted(blind)
    )
    states = sorted({j.state for j in jobs})
    print(f"\n{title}: {len(jobs)} launches ({placed}); ended {', '.join(states)}")
    print(
        f"{'facility':13} {'n':>3} {'what':7} {'portal med':>10} {'p90':>7} "
        f"{'blind med':>10} {'p90':>7} {'portal/blind':>12}"
    )
    for row in placement_errors(measured):
        waits, ends = blind.get(row.facility, ([], []))
        for what, n, med, p90, base in (
            ("wait", row.jobs, row.wait_median, row.wait_p90, waits),
            ("finish", row.finished, row.finish_median, row.finish_p90, ends),
        ):
            if med is None or p90 is None or not base:
                continue
            bmed = statistics.median(base)
            ratio = f"{med / bmed:11.2f}x" if bmed else "          -"
            print(
                f"{row.facility:13} {n:3d} {what:7} {med:9.1f}s {p90:6.1f}s "
                f"{bmed:9.1f}s {percentile(base, 90):6.1f}s {ratio}"
            )
    within = [abs(m.predicted_wait - m.real_wait) <= max(0.5 * m.real_wait, 60) for m in measured]
    print(f"wait within 50% or 60 s of the real one: {sum(within)} of {len(within)}")


def main() -> int:
    import logging

    logging.getLogger("paramiko").setLevel(logging.WARNING)
    env = _env()
    made: dict = {}
    client = None
    try:
        user, login, made = _setup(env)
        from launcher.slurm import backend as slurm_backend

        client = slurm_backend.slurm_client(made["slurm"].facility)
        for title in ("round 1, no history", "round 2, corrected by round 1"):
            _fill(client, login, made["slurm"].account_name)
            _print(title, _launch_and_follow(user, made))
        print(
            f"errors are |predicted - real| seconds; the fillers' limit {FILLER_LIMIT_MIN} min, "
            f"real {FILLER_SLEEP_S} s; launches {APART_S:.0f} s apart; blind: a launcher that "
            "ignores the queue (wait 0, finish at the run time alone)."
        )
    finally:
        if client is not None:
            from launcher.models import Job

            account = made["slurm"].account_name
            client.ssh.run(["scancel", f"--account={account}"])
            client.ssh.run(["sacctmgr", "-i", "delete", "account", f"name={account}"])
            folders = [
                w
                for w in Job.objects.filter(allocation=made["slurm"]).values_list(
                    "workdir", flat=True
                )
                if "/portal-jobs/portal-" in w and ".." not in w
            ]
            if folders:
                client.ssh.run(["rm", "-rf", "--", *folders])
            client.ssh.close()
        from django.db import connections

        connections.close_all()
        _db(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
