"""Preemption on the real Slurm (running -> preempted -> pending, resuming from the last
checkpoint): the trainer gets the checkpoint signal through Slurm, saves and exits 75; the
monitor moves the job to `preempted`, resubmits it in the same folder under a new token and the
resumed run finishes every epoch. Slurm's own time-limit signal (`--signal=B:USR1@<lead>`) takes
the same path, but slurmctld checks time limits only every ~30 s, so the test sends the same
signal itself (`scancel --batch --signal=USR1`), which keeps it to seconds."""

from __future__ import annotations

from decimal import Decimal

import pytest

from allocations.selectors import timeline
from launcher import services
from launcher.models import Job
from launcher.slurm import backend as slurm_backend
from tests.launcher.slurm_fixtures import TINY, poll_until, slurm_allocation, slurm_facility  # noqa: F401
from tests.launcher.test_slurm_jobs import jobs_named
from tests.waiting import wait_for

pytestmark = pytest.mark.django_db
EPOCHS = 6


def launch(allocation, user, **params):
    params = {**{k: v for k, v in TINY.items() if k != "wall_time_minutes"}, **params}
    job = services.job_launch(
        by=user, allocation=allocation, gpus=1, wall_time_minutes=5, params=params
    )
    return services.job_submit(job_id=job.pk)


def training_started(job):
    """Poll until the trainer reports a finished step (its signal handler is then installed)."""

    def check():
        services.jobs_poll(facility_id=job.allocation.facility_id)
        job.refresh_from_db()
        assert job.state in ("pending", "running"), (job.state, job.state_reason, job.log_tail)
        return job.state == "running" and (job.progress or {}).get("step", 0) >= 1

    wait_for(check, timeout=120, every=0.3, what="the first training step")


def test_a_checkpointed_job_is_resumed_and_finishes_every_epoch(slurm_allocation, researcher):
    job = launch(slurm_allocation, researcher, epochs=EPOCHS)
    first_id, first_token, workdir = job.scheduler_id, job.token, job.workdir
    training_started(job)
    backend = slurm_backend.slurm_client(slurm_allocation.facility)

    backend.ssh.run(["scancel", "--batch", "--signal=USR1", first_id])

    job = poll_until(job, Job.FINAL, timeout=240)
    assert job.state == "succeeded", (job.state, job.state_reason, job.log_tail)
    assert job.resumes == 1 and job.scheduler_id != first_id
    assert job.token == f"{first_token}-r1" and job.workdir == workdir
    moves = [(e.from_state, e.to_state) for e in timeline(job)]
    assert ("running", "preempted") in moves and ("preempted", "pending") in moves
    comments = " ".join(e.comment for e in timeline(job))
    assert "checkpointed on a signal" in comments and f"scheduler id {job.scheduler_id}" in comments
    # The first attempt really stopped early with the trainer's checkpoint exit status.
    first = backend.status([first_id])[first_id]
    assert first.exit_code == 75
    # The resumed run continued (not restarted) and trained every epoch.
    assert job.metrics["epochs_run"] == EPOCHS and len(job.metrics["history"]) == EPOCHS
    assert job.progress["state"] == "succeeded" and job.progress["epoch"] == EPOCHS
    # The second attempt's log is the trainer saying it continued from the checkpoint.
    assert "resumed from the checkpoint in" in job.log_tail, job.log_tail
    # Idempotent by the new token: a repeated resubmission finds the same Slurm job.
    assert jobs_named(backend, job.token) == [job.scheduler_id]
    again = slurm_backend.slurm_client(slurm_allocation.facility)
    from launcher.slurm.backend import SlurmBackend

    repeat = SlurmBackend().resume(facility=slurm_allocation.facility, job=job, token=job.token)
    assert repeat.already_submitted and repeat.scheduler_id == job.scheduler_id
    assert jobs_named(again, job.token) == [job.scheduler_id]
    # Earlier attempts' GPU-seconds are kept; the estimate covered one more attempt.
    assert job.prior_gpu_seconds > 0 and job.estimate_gpu_hours >= Decimal("0.083")


def test_a_preempted_job_is_not_resumed_beyond_the_allocations_hours(slurm_allocation, researcher):
    job = launch(slurm_allocation, researcher, epochs=EPOCHS)
    first_id = job.scheduler_id
    training_started(job)
    # Meanwhile the grant was cut to less than one more attempt (5 GPU-minutes).
    type(slurm_allocation).objects.filter(pk=slurm_allocation.pk).update(gpu_hours=Decimal("0.05"))

    slurm_backend.slurm_client(slurm_allocation.facility).ssh.run(
        ["scancel", "--batch", "--signal=USR1", first_id]
    )

    job = poll_until(job, Job.FINAL, timeout=120)
    assert job.state == "timeout" and job.scheduler_id == first_id
    assert "not resumed" in job.state_reason and "GPU-hours" in job.state_reason
    assert [e.to_state for e in timeline(job)][-2:] == ["preempted", "timeout"]
