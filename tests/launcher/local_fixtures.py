"""Fixtures for the local backend: a facility whose jobs are real processes in a folder of the
test's own, an active allocation on it, and helpers that wait on the job's files."""

from __future__ import annotations

import datetime as dt
import os
import signal
from decimal import Decimal
from pathlib import Path

import pytest
from django.utils import timezone

from allocations.models import Allocation
from launcher import services
from launcher.local import cells
from launcher.models import Job
from tests.factories import FacilityFactory
from tests.launcher.conftest import unique_name
from tests.waiting import wait_for

# A few seconds of training on synthetic CT slices; LONG keeps running until cancelled.
QUICK = {
    "model": "resnet18",
    "epochs": 1,
    "size": 32,
    "synthetic_n": 24,
    "threads": 1,
    "bootstrap": 20,
    "progress_every": 1,
}
LONG = {**QUICK, "epochs": 200, "patience": 200}


@pytest.fixture
def jobs_dir(member_tmp, settings):
    tmp_path = member_tmp
    settings.LOCAL_HOMES_DIR = tmp_path / "homes"
    folder = tmp_path / "local-jobs"
    settings.LOCAL_JOBS_DIR = folder
    yield folder
    stop_all(folder)


def stop_all(folder: Path) -> None:
    """Kill whatever cells a test left running: only processes whose working directory is one
    of this test's cell folders (so a reused pid is never someone else's process)."""
    for pid_file in folder.glob(f"*/*/*/{cells.PID}"):
        info = cells.read_json(pid_file) or {}
        for pid in (info.get("child_pid"), info.get("pid")):
            try:
                if pid and os.readlink(f"/proc/{pid}/cwd") == str(pid_file.parent):
                    os.kill(pid, signal.SIGKILL)
            except (FileNotFoundError, ProcessLookupError, PermissionError):
                continue


@pytest.fixture
def local_facility(db, jobs_dir):
    """A local facility that runs two single-slot jobs at once."""
    return FacilityFactory(
        slug=unique_name("local-"),
        kind="local",
        backend="local",
        gpu_hour_rate=Decimal("2.00"),
        backend_settings={"slots": 2},
    )


@pytest.fixture
def local_allocation(project, local_facility):
    """An active allocation on the local facility (provisioned through the registry)."""
    from launcher.provisioning import allocation_provision

    today = timezone.localdate()
    allocation = Allocation.objects.create(
        project=project,
        facility=local_facility,
        gpu_hours=Decimal(10),
        start_date=today,
        end_date=today + dt.timedelta(days=30),
        status="provisioning",
    )
    allocation = allocation_provision(allocation_id=allocation.pk)
    assert allocation.status == "active", allocation.status_reason
    return allocation


def launch(allocation, by, params=QUICK, gpus: int = 1) -> Job:
    return services.job_launch(
        by=by, allocation=allocation, gpus=gpus, wall_time_minutes=10, params=dict(params)
    )


def cell_of(job: Job) -> Path:
    job.refresh_from_db()
    return Path(job.workdir) / str(job.array_index or 0)


def poll_until(job: Job, states, *, timeout: float = 300) -> Job:
    """Run the monitor (what the beat task does) until the job reaches one of `states`."""

    def check():
        services.jobs_poll(facility_id=job.allocation.facility_id)
        job.refresh_from_db()
        return job.state in states

    wait_for(check, timeout=timeout, every=0.5, what=f"job {job.pk} in {states}")
    return job


def training_started(job: Job) -> bool:
    progress = cells.read_json(cell_of(job) / "out" / "progress.json") or {}
    return progress.get("state") == "running" and int(progress.get("step") or 0) >= 1
