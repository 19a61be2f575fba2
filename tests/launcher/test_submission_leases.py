"""Submissions that survive outages: one owner per submission (a lease), retries with backoff,
and a deadline after which the job fails with its last error and staff are told by email.

The facility is a Slurm facility whose SSH port nobody listens on (a real connection refused,
the transient error of a cluster that is down); time passing is written into the rows (the
next attempt's time, the deadline) rather than waited for."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core import mail
from django.utils import timezone

from allocations.models import ProjectMembership
from launcher import services
from launcher.models import Job
from launcher.services.submission import submit_backoff, submit_lease_take
from launcher.slurm import backend as slurm_backend
from tests.factories import FacilityFactory
from tests.launcher.conftest import free_port, unique_name
from tests.launcher.slurm_fixtures import TINY, make_allocation, slurm_settings
from tests.launcher.slurm_members import member_logins

PARAMS = {k: v for k, v in TINY.items() if k != "wall_time_minutes"}


@pytest.fixture
def down_allocation(db, project, researcher, services_env, settings):
    """An active allocation on a Slurm facility whose login node does not answer; the
    researcher has a cluster login there (else the launch is refused before any attempt)."""
    ProjectMembership.objects.filter(user=researcher).update(
        cluster_username=member_logins(services_env)[0]
    )
    settings.SUBMIT_RETRY_BASE_SECONDS, settings.SUBMIT_RETRY_MAX_SECONDS = 60, 300
    settings.SUBMIT_DEADLINE_SECONDS, settings.SUBMIT_LEASE_SECONDS = 1800, 300
    facility = FacilityFactory(
        slug=unique_name("down-"),
        backend="slurm",
        backend_settings=slurm_settings(services_env, port=free_port(), retries=0),
    )
    yield make_allocation(project, facility, status="active")
    slurm_backend.forget(facility.pk)


def launch(allocation, by) -> Job:
    return services.job_launch(
        by=by, allocation=allocation, gpus=1, wall_time_minutes=5, params=dict(PARAMS)
    )


def test_only_the_caller_holding_the_lease_submits(down_allocation, researcher):
    job = launch(down_allocation, researcher)
    lease = submit_lease_take(jobs=[job])
    assert lease is not None and lease.attempt == 1

    assert submit_lease_take(jobs=[job]) is None  # a second caller: the lease is held
    services.job_submit(job_id=job.pk)  # a duplicate task does nothing
    job.refresh_from_db()
    assert job.state == "submitting" and job.submit_attempts == 1
    assert job.submit_lease_owner == lease.owner and job.submit_lease_until == lease.until
    assert job.pk not in services.submissions_due()["jobs"]

    Job.objects.filter(pk=job.pk).update(
        submit_lease_until=timezone.now() - dt.timedelta(seconds=1)
    )
    assert job.pk in services.submissions_due()["jobs"]  # its owner died: the lease expired
    assert submit_lease_take(jobs=[job]).attempt == 2


def test_a_failed_attempt_backs_off_and_the_beat_enqueues_it_once_when_due(
    down_allocation, researcher
):
    job = launch(down_allocation, researcher)
    before = timezone.now()
    services.job_submit(job_id=job.pk)  # connection refused: transient, no exception

    job.refresh_from_db()
    assert job.state == "submitting" and job.submit_attempts == 1 and not job.submit_lease_owner
    assert job.submit_next_at - before >= dt.timedelta(seconds=60)
    assert job.submit_deadline - before >= dt.timedelta(seconds=1800)
    assert job.state_reason.startswith("Submission attempt 1 failed")
    assert services.submissions_dispatch() == {"jobs": [], "sweeps": []}  # not due yet

    Job.objects.filter(pk=job.pk).update(submit_next_at=timezone.now())  # the backoff is over
    assert services.submissions_dispatch()["jobs"] == [job.pk]
    assert services.submissions_dispatch()["jobs"] == []  # dispatched once, not every 10 s

    before = timezone.now()
    services.job_submit(job_id=job.pk)
    job.refresh_from_db()
    assert job.submit_attempts == 2 and job.submit_next_at - before >= dt.timedelta(seconds=120)


def test_the_backoff_doubles_up_to_its_cap(settings):
    settings.SUBMIT_RETRY_BASE_SECONDS, settings.SUBMIT_RETRY_MAX_SECONDS = 60, 300
    assert [submit_backoff(attempt=n).total_seconds() for n in range(1, 8)] == [
        60,
        120,
        240,
        300,
        300,
        300,
        300,
    ]


def test_past_the_deadline_the_job_fails_with_the_last_error_and_staff_are_told(
    down_allocation, researcher, admin, reviewer
):
    job = launch(down_allocation, researcher)
    services.job_submit(job_id=job.pk)
    Job.objects.filter(pk=job.pk).update(
        submit_next_at=timezone.now(), submit_deadline=timezone.now()
    )
    services.job_submit(job_id=job.pk)

    job.refresh_from_db()
    assert job.state == "failed" and job.submit_attempts == 2
    assert job.state_reason.startswith("Not submitted:") and "last error:" in job.state_reason
    assert "Unable to connect to port" in job.state_reason  # the last attempt's error
    assert job.pk not in services.submissions_due()["jobs"]
    [email] = mail.outbox
    assert sorted(email.to) == sorted([admin.email, reviewer.email])
    assert f"Job #{job.pk}" in email.body and job.state_reason[:80] in email.body
    assert job.failure_alerted_at is not None  # the hourly digest does not list it again
    assert services.failing_jobs_digest_send() == 0


def test_a_sweep_is_one_lease_over_all_its_cells(down_allocation, researcher):
    grid = {
        "models": ["resnet18"],
        "lrs": [1e-3, 1e-4],
        "lr_steps": [5],
        "weight_decays": [0.0],
        "folds": 1,
    }
    sweep = services.sweep_launch(
        by=researcher,
        allocation=down_allocation,
        grid=grid,
        gpus=1,
        wall_time_minutes=5,
        params=dict(PARAMS),
        concurrency=2,
    )
    cells = list(sweep.jobs.order_by("array_index"))
    lease = submit_lease_take(jobs=cells)
    assert lease.job_ids == [c.pk for c in cells]
    assert submit_lease_take(jobs=cells[1:]) is None  # any cell's lease is the sweep's

    Job.objects.filter(sweep=sweep).update(submit_lease_until=None)
    services.sweep_submit(sweep_id=sweep.pk)
    assert set(Job.objects.filter(sweep=sweep).values_list("state", "submit_attempts")) == {
        ("submitting", 2)
    }
