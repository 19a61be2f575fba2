"""Chaos: the login node's sshd is stopped for half a minute while five jobs are submitting.

A real Celery worker submits them; this test plays the beat (`launcher.poll_jobs` every 2 s).
While sshd is down every attempt fails and is retried with backoff under its lease; when sshd
comes back each job is submitted exactly once (one Slurm job carries its token, with the job's
wall time as its time limit), except the one whose deadline passed during the outage: it failed
with the reason and was never submitted. sshd is a throwaway instance (same keys and user as the
services' one, its own port), so the shared sshd other suites use never goes down; it is always
started again (finally) and stopped at teardown."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

import pytest
from django.utils import timezone

from allocations.models import ProjectMembership
from launcher import services, tasks
from launcher.models import Job
from launcher.provisioning import allocation_provision
from launcher.slurm import backend as slurm_backend
from tests.factories import FacilityFactory
from tests.launcher.conftest import unique_name
from tests.launcher.slurm_fixtures import (
    TINY,
    drop_account,
    drop_workdirs,
    make_allocation,
    slurm_settings,
)
from tests.launcher.slurm_members import member_logins
from tests.launcher.test_slurm_jobs import jobs_named
from tests.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

OUTAGE_SECONDS = 30
RETRIES = {
    "PORTAL_SUBMIT_RETRY_BASE_SECONDS": "2",
    "PORTAL_SUBMIT_RETRY_MAX_SECONDS": "8",
    "PORTAL_SUBMIT_LEASE_SECONDS": "30",
    "PORTAL_SUBMIT_DEADLINE_SECONDS": "600",
}
PARAMS = {k: v for k, v in TINY.items() if k != "wall_time_minutes"}


@pytest.fixture
def outage_allocation(project, researcher, services_env, throwaway_sshd):
    """An active allocation (its own account) on a facility reached through the throwaway sshd."""
    pinned = " ".join(Path(services_env["SSH_HOST_KEY_PUB"]).read_text().split()[:2])
    facility = FacilityFactory(
        slug=unique_name("outage-"),
        backend="slurm",
        backend_settings=slurm_settings(
            services_env, port=throwaway_sshd.port, host_key=pinned, connect_timeout=2, retries=0
        ),
    )
    ProjectMembership.objects.filter(user=researcher).update(
        cluster_username=member_logins(services_env)[0]
    )
    allocation = allocation_provision(allocation_id=make_allocation(project, facility).pk)
    assert allocation.status == "active", allocation.status_reason
    yield allocation
    slurm_backend.forget(facility.pk)
    drop_account(facility, allocation.account_name)
    drop_workdirs(facility, allocation)


def beat(seconds: float) -> None:
    """What celery beat does: launcher.poll_jobs every 2 s (here, for `seconds`)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        tasks.poll_jobs()
        time.sleep(2)


def test_five_jobs_submitting_through_an_ssh_outage_are_each_submitted_once(
    real_worker, outage_allocation, researcher, throwaway_sshd, settings
):
    for name, value in RETRIES.items():
        setattr(settings, name.removeprefix("PORTAL_"), int(value))
    facility = outage_allocation.facility
    slurm_backend.forget(facility.pk)
    with real_worker(RETRIES):
        throwaway_sshd.stop()
        try:
            jobs = [
                services.job_launch(
                    by=researcher,
                    allocation=outage_allocation,
                    gpus=1,
                    wall_time_minutes=3 + n,
                    params=dict(PARAMS),
                )
                for n in range(5)
            ]  # each enqueues its submission on commit
            doomed = jobs[0]
            Job.objects.filter(pk=doomed.pk).update(  # its deadline passes during the outage
                submit_deadline=timezone.now() + dt.timedelta(seconds=OUTAGE_SECONDS // 3)
            )
            beat(OUTAGE_SECONDS)
            during = {j.pk: j for j in Job.objects.filter(pk__in=[j.pk for j in jobs])}
        finally:
            throwaway_sshd.start()
        wait_for(
            lambda: (
                beat(2)
                or not Job.objects.filter(pk__in=[j.pk for j in jobs], state="submitting").exists()
            ),
            timeout=90,
            every=0,
            what="every submission to end",
        )

    assert all(j.state in ("submitting", "failed") and not j.scheduler_id for j in during.values())
    assert all(j.submit_attempts >= 3 for j in during.values())  # retried, with backoff
    assert all(j.submit_attempts <= 1 + OUTAGE_SECONDS // 2 for j in during.values())
    backend = slurm_backend.slurm_client(facility)
    doomed.refresh_from_db()
    assert doomed.state == "failed" and doomed.state_reason.startswith("Not submitted:")
    assert "last error:" in doomed.state_reason and doomed.finished_at >= doomed.submit_deadline
    assert jobs_named(backend, doomed.token) == []
    for job in jobs[1:]:
        job.refresh_from_db()
        assert job.state not in ("submitting", "failed"), (job.state, job.state_reason)
        assert job.scheduler_id and jobs_named(backend, job.token) == [job.scheduler_id]
        sacct = ["sacct", "-n", "-X", "-P", "-j", job.scheduler_id, "-o", "Timelimit"]
        limit = wait_for(
            lambda cmd=sacct: backend.ssh.run(cmd).stdout.strip(),
            what="the job's accounting record",
        )  # sbatch --time: its wall time
        assert limit == f"00:{job.wall_time_minutes:02d}:00"
