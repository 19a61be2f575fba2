"""Datasets checked where they are read (issue 21): the portal resolves a dataset at launch,
but the job reads it later; a symlink swapped in between must not let it read outside the
project's folder. The trainer gets the project's folder (`--data-root`) and resolves `--data`
again when it starts, on the node. Local job folders are private, like Slurm's."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import stat
import subprocess
import sys
from decimal import Decimal

import pytest
from django.conf import settings as django_settings
from django.utils import timezone

from allocations.models import Allocation, Dataset
from launcher import services
from launcher.workloads.ctxray.config import EXIT_USAGE, TrainConfig, UsageError
from tests.factories import FacilityFactory
from tests.launcher.local_fixtures import QUICK, cell_of, jobs_dir, launch, poll_until  # noqa: F401

pytestmark = [pytest.mark.django_db]


@pytest.fixture
def store(member_tmp, project):
    root = member_tmp / "project-data"
    (root / project.code / "cxr").mkdir(parents=True)
    (member_tmp / "secret").mkdir()
    (member_tmp / "secret" / "negative").mkdir()
    return root


def _swap_for_a_symlink(folder, target) -> None:
    shutil.rmtree(folder)
    os.symlink(target, folder)


def test_the_trainer_refuses_data_that_resolves_outside_its_root(store, project, member_tmp):
    ours = store / project.code
    inside = TrainConfig(data=str(ours / "cxr"), out="o", data_root=str(ours))
    inside.confine_data()
    assert inside.data == os.path.realpath(ours / "cxr")

    _swap_for_a_symlink(ours / "cxr", member_tmp / "secret")
    swapped = TrainConfig(data=str(ours / "cxr"), out="o", data_root=str(ours))
    with pytest.raises(UsageError, match="outside"):
        swapped.confine_data()

    # The command line, as a job runs it: refused before anything is read.
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "launcher.workloads.ctxray",
            "train",
            "--data",
            str(ours / "cxr"),
            "--data-root",
            str(ours),
            "--out",
            str(member_tmp / "out"),
        ],
        cwd=django_settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == EXIT_USAGE
    assert "outside" in run.stderr and "refused" in run.stderr


def test_a_symlink_swapped_in_after_the_launch_fails_the_local_job(
    store, project, researcher, member_tmp, jobs_dir
):
    facility = FacilityFactory(
        slug="local-swap",
        kind="local",
        backend="local",
        backend_settings={"storage_root": str(store), "slots": 1},
    )
    today = timezone.localdate()
    allocation = Allocation.objects.create(
        project=project,
        facility=facility,
        gpu_hours=Decimal(10),
        start_date=today,
        end_date=today + dt.timedelta(days=30),
        status="active",
        account_name="swap-a1",
    )
    Dataset.objects.create(
        project=project,
        name="cxr",
        location="cxr",
        modality="xray",
        sensitivity="public",
        created_by=researcher,
    )
    ours = store / project.code
    # Between the launch's check and the start, the dataset folder becomes a symlink out.
    job = launch(allocation, researcher, params={**QUICK, "dataset": "cxr"})
    assert job.params["data_root"] == os.path.realpath(ours)
    _swap_for_a_symlink(ours / "cxr", member_tmp / "secret")

    services.job_submit(job_id=job.pk)
    job = poll_until(job, {"failed"})

    log = (cell_of(job) / "log.txt").read_text()
    assert "outside" in log and "refused" in log, log
    # The job's folder and its cell are the portal's: others (the member's uid too) pass
    # through, neither list nor write; the log is the portal's alone; out/ is the member's.
    for path in (cell_of(job).parent, cell_of(job)):
        assert stat.S_IMODE(path.stat().st_mode) == 0o711 and path.stat().st_uid == 0, path
    assert stat.S_IMODE((cell_of(job) / "log.txt").stat().st_mode) & 0o077 == 0
    out = (cell_of(job) / "out").stat()
    assert stat.S_IMODE(out.st_mode) == 0o700 and out.st_uid not in (0, os.geteuid())
