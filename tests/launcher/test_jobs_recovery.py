"""Monitoring survives the login node going away: with sshd stopped mid-poll the job is not
lost (its row stays as it was) and polling recovers once sshd is back."""

from __future__ import annotations

import pytest

from launcher import services
from launcher.models import Job
from tests.launcher.slurm_fixtures import TINY, poll_until, slurm_allocation, slurm_facility  # noqa: F401

pytestmark = pytest.mark.django_db


def test_polling_survives_sshd_stopping_and_recovers(
    slurm_allocation, researcher, throwaway_sshd, services_env
):
    from allocations.models import Facility

    facility = Facility.objects.get(pk=slurm_allocation.facility_id)
    facility.backend_settings = {
        **facility.backend_settings,
        "port": throwaway_sshd.port,
        "host_key": services_env["SSH_HOST_KEY_PUB"],
    }  # a bare key
    facility.save()
    slurm_allocation.refresh_from_db()
    params = {k: v for k, v in TINY.items() if k != "wall_time_minutes"}
    job = services.job_launch(
        by=researcher,
        allocation=slurm_allocation,
        gpus=1,
        wall_time_minutes=5,
        params={**params, "epochs": 8},
    )
    job = services.job_submit(job_id=job.pk)
    assert job.state == "pending", job.state_reason
    poll_until(job, ["running"])

    throwaway_sshd.stop()
    result = services.jobs_poll(facility_id=facility.pk)

    assert result["errors"] == 1 and result["moved"] == 0
    job.refresh_from_db()
    assert job.state == "running" and job.scheduler_id

    throwaway_sshd.start()
    job = poll_until(job, Job.FINAL, timeout=180)
    assert job.state == "succeeded" and job.metrics
