"""Fixtures shared by the launcher's Slurm integration tests (imported by those modules):
a Slurm facility on the real cluster of `make services`, an active allocation with its own
fresh account (removed afterwards) whose researcher's cluster login is a member login of the
test cluster (jobs run as it), and a loop that polls like the beat task does."""

from __future__ import annotations

import datetime as dt
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from django.utils import timezone

from allocations.models import Allocation, ProjectMembership
from launcher import services
from launcher.models import Job
from launcher.provisioning import allocation_provision
from launcher.slurm import backend as slurm_backend
from tests.factories import FacilityFactory
from tests.launcher.conftest import unique_name
from tests.launcher.slurm_members import member_logins
from tests.waiting import wait_for

SITE_PACKAGES = str(
    Path(sys.prefix)
    / "lib"
    / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    / "site-packages"
)
# The portal's venv python lives under /root (unreadable for the cluster user); the system
# python of the same version with the venv's site-packages on PYTHONPATH runs the trainer.
CLUSTER_PYTHON = f"/usr/bin/python{sys.version_info[0]}.{sys.version_info[1]}"


def slurm_settings(env: dict[str, str], **overrides: object) -> dict[str, object]:
    return {
        "host": env["SSH_HOST"],
        "port": int(env["SSH_PORT"]),
        "user": env["SSH_USER"],
        "key_path": env["SSH_KEY_PATH"],
        "host_key": env["SSH_KNOWN_HOSTS"],
        "cluster": env["SLURM_CLUSTER"],
        "partition": env["SLURM_PARTITION"],
        "python": CLUSTER_PYTHON,
        "python_path": SITE_PACKAGES,
        "connect_timeout": 5,
        "retries": 1,
        "backoff_seconds": 0.2,
        **overrides,
    }


@pytest.fixture
def slurm_facility(db, services_env):
    facility = FacilityFactory(
        slug=unique_name("slurm-"),
        backend="slurm",
        gpu_hour_rate=Decimal("0.50"),
        backend_settings=slurm_settings(services_env),
    )
    yield facility
    slurm_backend.forget(facility.pk)


def make_allocation(project, facility, *, gpu_hours: int = 10, status: str = "provisioning"):
    today = timezone.localdate()
    return Allocation.objects.create(
        project=project,
        facility=facility,
        gpu_hours=Decimal(gpu_hours),
        start_date=today,
        end_date=today + dt.timedelta(days=30),
        status=status,
        account_name=unique_name("t"),
    )


def drop_account(facility, name: str) -> None:
    backend = slurm_backend.slurm_client(facility)
    backend.ssh.run(["scancel", f"--account={name}"])
    backend.ssh.run(["sacctmgr", "-i", "delete", "account", f"name={name}"])


@pytest.fixture
def slurm_allocation(project, researcher, slurm_facility, services_env):
    """An active allocation on the real cluster: 10 GPU-hours, its own account; the researcher's
    cluster login is the test cluster's first member login (their jobs run as it)."""
    ProjectMembership.objects.filter(user=researcher).update(
        cluster_username=member_logins(services_env)[0]
    )
    allocation = allocation_provision(allocation_id=make_allocation(project, slurm_facility).pk)
    assert allocation.status == "active", allocation.status_reason
    yield allocation
    drop_account(slurm_facility, allocation.account_name)
    drop_workdirs(slurm_facility, allocation)


def drop_workdirs(facility, allocation) -> None:
    """Remove the job folders the test staged (a training job leaves ~200 MB of checkpoints)."""
    folders = sorted(
        {
            w
            for w in Job.objects.filter(allocation=allocation).values_list("workdir", flat=True)
            if "/portal-jobs/portal-" in w and ".." not in w
        }
    )
    if folders:
        slurm_backend.slurm_client(facility).ssh.run(["rm", "-rf", "--", *folders])


TINY = {
    "model": "resnet18",
    "epochs": 2,
    "size": 32,
    "synthetic_n": 24,
    "threads": 1,
    "bootstrap": 50,
    "progress_every": 1,
    "wall_time_minutes": 5,
}


def poll_until(job: Job, states, *, timeout: float = 120) -> Job:
    """Run the monitor (what the beat task does) until the job reaches one of `states`."""

    def check():
        services.jobs_poll(facility_id=job.allocation.facility_id)
        job.refresh_from_db()
        return job.state in states and job

    return wait_for(check, timeout=timeout, every=0.5, what=f"job {job.pk} to reach {states}")
