"""A real Celery worker submits a local job and is killed (-9) while the job's trainer runs: the
job's process runs on (its own session), a new worker's beat tasks find it by its files, see it
finish, and charge it exactly once.

The trainer is frozen (SIGSTOP) from the moment it exists until the old worker is dead, so the
kill lands mid-run however fast the machine trains: a short job can otherwise finish between two
polls of its progress file, and the test would wait for a "running" it never sees."""

from __future__ import annotations

import math
import os
import signal

import pytest

from allocations.models import UsageRecord
from launcher import tasks
from launcher.local import cells
from launcher.local.supervisor import proc_start_ticks
from launcher.models import Job
from tests.launcher.local_fixtures import (  # noqa: F401
    cell_of,
    jobs_dir,
    launch,
    local_allocation,
    local_facility,
)
from tests.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)
# Long enough to be killed mid-run, short enough to finish in a test.
MEDIUM = {
    "model": "resnet18",
    "epochs": 3,
    "size": 32,
    "synthetic_n": 24,
    "threads": 1,
    "bootstrap": 20,
    "progress_every": 1,
}


def test_a_worker_killed_mid_run_loses_no_job_and_charges_it_once(
    real_worker, local_allocation, researcher, jobs_dir
):
    env = {"PORTAL_LOCAL_JOBS_DIR": str(jobs_dir)}
    with real_worker(env) as worker:
        job = launch(local_allocation, researcher, MEDIUM)  # the worker submits it
        wait_for(lambda: Job.objects.get(pk=job.pk).workdir, timeout=120, what="submission")
        pid = wait_for(
            lambda: (
                (cells.read_json(cell_of(job) / cells.PID) or {}).get("child_pid")
                and cells.read_json(cell_of(job) / cells.PID)
            ),
            timeout=240,
            what="trainer",
        )
        os.kill(pid["child_pid"], signal.SIGSTOP)
        try:
            os.kill(worker.pid, signal.SIGKILL)
            worker.wait()
            assert proc_start_ticks(pid["pid"]) == pid["start_ticks"]  # outlived its worker
            assert proc_start_ticks(pid["child_pid"]) is not None
            assert not (cell_of(job) / cells.EXIT).exists()
        finally:
            os.kill(pid["child_pid"], signal.SIGCONT)

    with real_worker(env):

        def finished():
            tasks.poll_jobs.delay()  # what beat sends every 10 s
            return Job.objects.get(pk=job.pk).state in Job.FINAL

        wait_for(finished, timeout=300, every=2, what="the job to finish under the new worker")
        tasks.ingest_usage.delay()
        wait_for(
            lambda: UsageRecord.objects.filter(allocation=local_allocation).exists(),
            timeout=60,
            what="the usage record",
        )

    job.refresh_from_db()
    assert job.state == "succeeded" and job.metrics
    tasks.ingest_usage()  # once more, in this process: nothing new
    records = UsageRecord.objects.filter(allocation=local_allocation, source="local")
    assert records.count() == 1
    elapsed = cells.read_json(cell_of(job) / cells.EXIT)["elapsed_seconds"]
    assert records.get().gpu_seconds == job.gpu_seconds == math.ceil(elapsed) * job.gpus
