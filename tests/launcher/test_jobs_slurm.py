"""Jobs on the real Slurm over real SSH, driven through the launcher's services as the API and
the tasks drive them: a training run to success with its usage charged, cancel, a failing job,
a job beyond the account's cap, and re-submission after a dropped connection."""

from __future__ import annotations

from decimal import Decimal

import pytest

from allocations.models import Dataset, ProjectMembership, UsageRecord
from allocations.selectors import allocation_usage_totals
from launcher import services
from launcher.models import Job
from launcher.slurm import backend as slurm_backend
from launcher.slurm.client import SlurmClient
from tests.launcher.conftest import make_target
from tests.launcher.slurm_fixtures import TINY, poll_until, slurm_allocation, slurm_facility  # noqa: F401
from tests.launcher.test_slurm_jobs import DropsAfterSbatch, jobs_named
from tests.waiting import wait_for

pytestmark = pytest.mark.django_db


def launch(allocation, user, **params):
    params = {**TINY, **params}
    wall = params.pop("wall_time_minutes")
    job = services.job_launch(
        by=user,
        allocation=allocation,
        gpus=params.pop("gpus", 1),
        wall_time_minutes=wall,
        params=params,
    )
    return services.job_submit(job_id=job.pk)


def test_a_training_job_runs_to_success_reports_progress_and_is_charged(
    slurm_allocation, researcher
):
    # Two GPUs train as two DDP processes (torchrun), each on half of the 18 training images.
    job = launch(slurm_allocation, researcher, gpus=2, batch_size=4)
    assert job.state == "pending" and job.scheduler_id.isdigit()

    job = poll_until(job, Job.FINAL, timeout=300)

    assert job.state == "succeeded", (job.state_reason, job.log_tail)
    assert job.progress["state"] == "succeeded" and job.progress["epoch"] == 2
    assert job.progress["world_size"] == 2
    assert job.progress["history"], "loss points are kept for the curve"
    assert job.metrics["patient"]["accuracy"]["ci"] and job.metrics["synthetic_data"] is True
    assert "portal: cell 0" in job.log_tail
    # Accounting: elapsed x 2 GPUs, charged once however often it is ingested.
    wait_for(
        lambda: (
            services.usage_ingest(allocation=slurm_allocation)
            and UsageRecord.objects.filter(allocation=slurm_allocation).exists()
        ),
        timeout=60,
        what="the sacct record",
    )
    services.usage_ingest(allocation=slurm_allocation)
    record = UsageRecord.objects.get(allocation=slurm_allocation)
    assert record.detail["job_id"] == job.scheduler_id and record.detail["gpus"] == 2
    assert record.gpu_seconds == record.detail["elapsed_seconds"] * 2 > 0
    assert record.cost == (Decimal(record.gpu_seconds) / 3600 * Decimal("0.50")).quantize(
        Decimal("0.0001")
    )
    job.refresh_from_db()
    assert job.gpu_seconds == record.gpu_seconds
    assert (
        allocation_usage_totals(slurm_allocation.pk)["gpu_hours"]
        == Decimal(record.gpu_seconds) / 3600
    )


def test_cancel_stops_a_running_job_and_a_second_cancel_conflicts(slurm_allocation, researcher):
    from allocations.transitions import InvalidTransition

    job = launch(slurm_allocation, researcher, epochs=200, synthetic_n=64)
    job = poll_until(job, ["running"])

    services.job_cancel(job=job, by=researcher)

    assert job.state == "cancelled"
    backend = slurm_backend.slurm_client(slurm_allocation.facility)
    wait_for(
        lambda: backend.status([job.scheduler_id])[job.scheduler_id].state.value == "cancelled",
        what="Slurm to cancel it",
    )
    with pytest.raises(InvalidTransition):
        services.job_cancel(job=job, by=researcher)


def test_a_failing_job_is_failed_with_its_exit_code(slurm_allocation, researcher):
    # A registered dataset whose folder exists (so the launch accepts it) but holds no images:
    # the trainer, given the resolved path as --data, fails on the node.
    facility = slurm_allocation.facility
    ssh = slurm_backend.slurm_client(facility).ssh
    root = f"portal-test-data-{slurm_allocation.account_name}"
    assert ssh.run(["mkdir", "-p", f"{root}/{slurm_allocation.project.code}/empty"]).ok()
    facility.backend_settings = {**facility.backend_settings, "storage_root": root}
    facility.save()
    Dataset.objects.create(
        project=slurm_allocation.project,
        name="empty",
        location="empty",
        modality="ct",
        sensitivity="public",
    )
    try:
        job = launch(slurm_allocation, researcher, dataset="empty")
        job = poll_until(job, Job.FINAL)
        acl = ssh.run(["getfacl", "-cp", job.workdir]).stdout.split()
    finally:
        ssh.run(["rm", "-rf", "--", root])

    assert job.params["data_path"].endswith(f"/{root}/{slurm_allocation.project.code}/empty")
    # The job's folder is private to the service account and the member the job runs as.
    login = ProjectMembership.objects.get(user=researcher).cluster_username
    assert {"user::rwx", f"user:{login}:rwx", "group::---", "other::---"} <= set(acl)
    assert [e for e in acl if e.startswith("user:") and e.count(":") == 2 and e != "user::rwx"] == [
        f"user:{login}:rwx"
    ]

    assert job.state == "failed" and job.exit_code == 2
    assert job.state_reason == "exit code 2"
    services.jobs_poll(facility_id=slurm_allocation.facility_id)
    job.refresh_from_db()
    assert "ctxray: error" in job.log_tail


def test_a_job_beyond_the_accounts_cap_waits_with_the_schedulers_reason(
    slurm_allocation, researcher
):
    # The portal thinks 10 GPU-hours are left; the cluster's cap says 1 GPU-minute (usage the
    # portal has not ingested yet, or a cap cut by the site): Slurm holds the job.
    slurm_backend.slurm_client(slurm_allocation.facility).set_cap(
        name=slurm_allocation.account_name, gpu_minutes=1
    )
    job = launch(slurm_allocation, researcher)

    def held():
        services.jobs_poll(facility_id=slurm_allocation.facility_id)
        job.refresh_from_db()
        return job.state_reason

    wait_for(held, what="a pending reason")
    assert job.state == "pending" and job.state_reason == "AssocGrpGRESMinutes"


def test_resubmitting_after_a_dropped_connection_finds_the_job_by_its_token(
    slurm_allocation, researcher, services_env, monkeypatch
):
    facility = slurm_allocation.facility
    conf = slurm_backend.slurm_settings(facility)
    dropping = SlurmClient(
        DropsAfterSbatch(make_target(services_env, retries=0)),
        cluster=conf["cluster"],
        partition=conf["partition"],
    )
    monkeypatch.setattr("launcher.slurm.backend.slurm_client", lambda f: dropping)
    job = services.job_launch(
        by=researcher,
        allocation=slurm_allocation,
        gpus=1,
        wall_time_minutes=5,
        params={k: v for k, v in TINY.items() if k != "wall_time_minutes"},
    )

    services.job_submit(job_id=job.pk)  # transient: the next attempt is scheduled, no raise
    job.refresh_from_db()
    assert job.state == "submitting" and not job.scheduler_id and job.submit_attempts == 1
    assert job.state_reason.startswith("Submission attempt 1 failed (connection dropped")
    monkeypatch.undo()

    job = services.job_submit(job_id=job.pk)  # the next attempt (what the beat enqueues)

    assert job.state == "pending"
    assert jobs_named(slurm_backend.slurm_client(facility), job.token) == [job.scheduler_id]
    assert "found by its token" in job_events(job)[-1]


def job_events(job):
    from allocations.selectors import timeline

    return [e.comment for e in timeline(job)]
