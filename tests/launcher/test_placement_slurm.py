"""Placement on the real Slurm of `make services` (docs/placement.md): with both GPUs filled by
other work, a researcher with allocations on a Slurm facility and a local one gets the local one
first, and the Slurm one first once the cluster is free, from the scheduler's own estimate
(`sbatch --test-only` as the member); `"allocation": "auto"` launches there; and the wait the
job recorded at launch is within 50% (or 60 s) of the wait it really had."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.utils import timezone

from allocations.models import Allocation
from launcher import services
from launcher.models import Job
from launcher.slurm import backend as slurm_backend
from tests.factories import FacilityFactory
from tests.launcher.slurm_fixtures import TINY, poll_until, slurm_allocation, slurm_facility  # noqa: F401  (fixtures)
from tests.launcher.slurm_members import as_member, member_logins
from tests.waiting import wait_for

pytestmark = pytest.mark.django_db

JOB = {"gpus": 1, "wall_time_minutes": 5, "params": {**TINY}}


@pytest.fixture
def local_allocation(project, settings, tmp_path):
    """A local facility with two free slots, dearer than the cluster (2.00 against 0.50)."""
    settings.LOCAL_JOBS_DIR = tmp_path / "local-jobs"
    facility = FacilityFactory(
        slug="local", backend="local", gpu_hour_rate=Decimal("2.00"), backend_settings={"slots": 2}
    )
    today = timezone.localdate()
    return Allocation.objects.create(
        project=project,
        facility=facility,
        gpu_hours=Decimal(20),
        start_date=today,
        end_date=today + dt.timedelta(days=30),
        status="active",
        account_name="local-a",
    )


def fill_gpus(allocation, services_env, *, minutes: int, seconds: int) -> list[str]:
    """Both GPUs of the cluster taken by two one-GPU jobs of the member (time limit `minutes`,
    each sleeping `seconds`), running before this returns: the backlog a placement faces."""
    client = slurm_backend.slurm_client(allocation.facility)
    login = member_logins(services_env)[0]
    ids = []
    for _ in range(2):
        result = as_member(
            client,
            login,
            [
                "sbatch", "--parsable", f"--account={allocation.account_name}", "--gres=gpu:1",
                f"--time={minutes}", "--output=/dev/null", "--chdir=/tmp",
                f"--wrap=sleep {seconds}",
            ],
        )  # fmt: skip
        assert result.rc == 0, result.stderr
        ids.append(result.stdout.strip().split(";")[0])

    def running():
        out = client.ssh.run(["squeue", "-h", "-j", ",".join(ids), "-o", "%T"]).stdout.split()
        return out == ["RUNNING", "RUNNING"]

    wait_for(running, timeout=60, every=0.5, what="both GPUs to be taken")
    return ids


def place(api, user):
    response = api.as_user(user).post("/api/v1/placements/", JOB, format="json")
    assert response.status_code == 200, response.json()
    return response.json()


def facilities(body):
    return [o["facility"] for o in body["options"]]


def test_local_first_while_slurm_is_full_and_slurm_first_once_free_then_auto_goes_there(
    api, researcher, slurm_allocation, local_allocation, services_env
):
    slurm_slug = slurm_allocation.facility.slug
    fillers = fill_gpus(slurm_allocation, services_env, minutes=10, seconds=600)

    while_full = place(api, researcher)

    assert facilities(while_full) == ["local", slurm_slug]
    queued = while_full["options"][1]
    assert queued["eligible"] and queued["wait"]["source"] == "backend"
    assert (
        "sbatch --test-only" in queued["wait"]["basis"] and "2 running" in queued["wait"]["basis"]
    )
    assert 8 * 60 < queued["wait"]["seconds"] <= 10 * 60  # until a filler's time limit
    assert f"{slurm_slug} " in while_full["summary"] and "(queue " in while_full["summary"]

    client = slurm_backend.slurm_client(slurm_allocation.facility)
    client.ssh.run(["scancel", *fillers])
    # Once the cluster is free (other work on it may take a moment to go too).
    once_free = wait_for(
        lambda: (body := place(api, researcher))["chosen"] == slurm_allocation.pk and body,
        timeout=120,
        every=2,
        what="the cluster to rank first",
    )
    first = once_free["options"][0]
    assert first["wait"]["seconds"] < 60 and "sbatch --test-only" in first["wait"]["basis"]

    response = api.as_user(researcher).post(
        "/api/v1/jobs/", {**JOB, "allocation": "auto"}, format="json"
    )

    assert response.status_code == 201, response.json()
    job = Job.objects.get(pk=response.json()["id"])
    assert job.allocation_id == slurm_allocation.pk
    assert job.placement["chosen"] == slurm_allocation.pk
    assert [o["facility"] for o in job.placement["options"]][0] == slurm_slug
    services.job_cancel(job=job, by=researcher)


def test_the_recorded_wait_is_within_half_or_a_minute_of_the_real_one(
    api, researcher, slurm_allocation, services_env
):
    fill_gpus(slurm_allocation, services_env, minutes=2, seconds=100)

    response = api.as_user(researcher).post(
        "/api/v1/jobs/", {**JOB, "allocation": "auto"}, format="json"
    )
    assert response.status_code == 201, response.json()
    job = Job.objects.get(pk=response.json()["id"])
    assert job.allocation_id == slurm_allocation.pk and job.predicted_wait_seconds > 60
    services.job_submit(job_id=job.pk)

    job = poll_until(job, {"running", "succeeded", "failed"}, timeout=300)

    real = job.real_wait_seconds
    predicted = job.predicted_wait_seconds
    print(f"\nplacement wait: predicted {predicted} s, real {real:.1f} s")
    assert real is not None and real > 30, (predicted, real)
    assert abs(predicted - real) <= max(0.5 * real, 60), (predicted, real)
    errors = api.as_user(researcher).get("/api/v1/placements/calibration/").json()
    row = next(r for r in errors["facilities"] if r["facility"] == slurm_allocation.facility.slug)
    assert row["jobs"] == 1 and row["wait_median"] == pytest.approx(abs(predicted - real), abs=1)
    services.job_cancel(job=job, by=researcher)
