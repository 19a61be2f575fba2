"""A real Celery worker on Redis killed (-9) while it is inside the submission, after sbatch
went out and before it recorded the reply: after a restart the job is submitted exactly once
(found by its token), and the reconciler lists it as due once the dead worker's lease expired."""

from __future__ import annotations

import os
import signal

import pytest

from launcher import services, tasks
from launcher.models import Job
from launcher.slurm import backend as slurm_backend
from tests.launcher.slurm_fixtures import TINY, slurm_allocation, slurm_facility  # noqa: F401
from tests.launcher.test_slurm_jobs import jobs_named
from tests.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_worker_killed_mid_submit_does_not_submit_twice(
    real_worker, slurm_allocation, researcher, tmp_path
):
    params = {k: v for k, v in TINY.items() if k != "wall_time_minutes"}
    flag = tmp_path / "paused"
    fault = {
        "PORTAL_FAULT_PAUSE": "after-submit",
        "PORTAL_FAULT_FLAG": str(flag),
        "PORTAL_SUBMIT_LEASE_SECONDS": "3",
    }  # the killed worker's lease expires soon
    with real_worker(fault) as worker:
        job = services.job_launch(
            by=researcher, allocation=slurm_allocation, gpus=1, wall_time_minutes=5, params=params
        )  # enqueues after commit
        wait_for(flag.exists, timeout=90)
        os.kill(worker.pid, signal.SIGKILL)
    job.refresh_from_db()
    assert job.state == "submitting" and not job.scheduler_id
    backend = slurm_backend.slurm_client(slurm_allocation.facility)
    assert len(jobs_named(backend, job.token)) == 1  # sbatch did go out
    assert job.submit_lease_owner and job.submit_attempts == 1  # the dead worker's lease
    wait_for(
        lambda: job.pk in services.submissions_due()["jobs"],
        timeout=30,
        what="the dead worker's lease to expire",
    )

    with real_worker():
        tasks.submit_job.delay(job.pk)  # what the reconciler (poll_jobs) enqueues
        wait_for(lambda: Job.objects.get(pk=job.pk).state != "submitting", timeout=60)

    job.refresh_from_db()
    assert job.state in ("pending", "running", *Job.FINAL) and job.scheduler_id
    assert jobs_named(backend, job.token) == [job.scheduler_id]
