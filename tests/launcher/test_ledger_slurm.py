"""The ledger against the real Slurm: a `gpus: 2` job trains as two DDP processes under
torchrun and is charged 2 x its elapsed time; usage that arrives after the allocation was
closed is still charged by the beat; and `GET /api/v1/allocations/{id}/` gives exactly the
GPU-seconds sacct accounts for the job (no rounding)."""

from __future__ import annotations

from decimal import ROUND_UP, Decimal

import pytest

from allocations.models import UsageRecord
from allocations.selectors import allocation_ledger
from allocations.services import allocation_close
from launcher import services, tasks
from launcher.models import Job
from launcher.slurm import backend as slurm_backend
from tests.launcher.slurm_fixtures import TINY, poll_until, slurm_allocation, slurm_facility  # noqa: F401
from tests.waiting import wait_for

pytestmark = pytest.mark.django_db


def _sacct_gpu_seconds(facility, scheduler_id: str) -> tuple[int, int]:
    """(ElapsedRaw, GPUs) straight from sacct, read independently of the portal's parser."""
    out = (
        slurm_backend.slurm_client(facility)
        .ssh.run(["sacct", "-X", "-n", "-P", "-j", scheduler_id, "-o", "ElapsedRaw,AllocTRES"])
        .stdout
    )
    elapsed, tres = out.strip().splitlines()[0].split("|")
    gpus = next(int(part.split("=")[1]) for part in tres.split(",") if part.startswith("gres/gpu="))
    return int(elapsed), gpus


def test_a_two_gpu_job_runs_two_processes_and_is_charged_exactly_after_close(
    slurm_allocation, researcher, api
):
    params = {**TINY, "batch_size": 4}  # two ranks share 18 training images
    wall = params.pop("wall_time_minutes")
    job = services.job_launch(
        by=researcher, allocation=slurm_allocation, gpus=2, wall_time_minutes=wall, params=params
    )
    reserved = allocation_ledger(slurm_allocation.pk).gpu_seconds_reserved
    # The limit, 2 GPUs x the wall time (Slurm's --time stops it there), not a prediction.
    assert job.estimate_gpu_hours == (Decimal(2 * wall) / 60).quantize(
        Decimal("0.001"), rounding=ROUND_UP
    )
    assert reserved == job.estimate_gpu_hours * 3600 > 0
    job = services.job_submit(job_id=job.pk)

    job = poll_until(job, Job.FINAL, timeout=300)

    assert job.state == "succeeded", (job.state_reason, job.log_tail)
    assert job.progress["world_size"] == 2
    assert "(torchrun, 2 processes)" in job.log_tail
    # The allocation is closed before its usage was read: the beat still charges it.
    allocation_close(allocation=slurm_allocation, comment="Project ended.")
    elapsed, gpus = wait_for(
        lambda: _final_sacct(slurm_allocation.facility, job),
        timeout=60,
        what="sacct's final record",
    )
    wait_for(
        lambda: (
            tasks.ingest_usage() is not None
            and UsageRecord.objects.filter(allocation=slurm_allocation).exists()
        ),
        timeout=60,
        what="the usage record",
    )

    record = UsageRecord.objects.get(allocation=slurm_allocation)
    assert gpus == 2 and record.gpu_seconds == 2 * elapsed and record.job_id == job.pk
    job.refresh_from_db()
    assert job.gpu_seconds == 2 * elapsed
    body = api.as_user(researcher).get(f"/api/v1/allocations/{slurm_allocation.pk}/").json()
    assert body["status"] == "closed"
    assert body["gpu_seconds_used"] == 2 * elapsed
    assert body["gpu_hours_used"] == pytest.approx(2 * elapsed / 3600, rel=1e-12)
    assert body["gpu_seconds_reserved"] == 0  # the job is final: its charge is the truth


def _final_sacct(facility, job: Job) -> tuple[int, int] | None:
    out = (
        slurm_backend.slurm_client(facility)
        .ssh.run(["sacct", "-X", "-n", "-P", "-j", job.scheduler_id, "-o", "State"])
        .stdout.strip()
    )
    if not out or out.splitlines()[0] in ("RUNNING", "PENDING"):
        return None
    return _sacct_gpu_seconds(facility, job.scheduler_id)
