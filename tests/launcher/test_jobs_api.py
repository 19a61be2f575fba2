"""The jobs API without a cluster: who may launch, per-field 400s, the 409 refusals with their
numbers, scoping (others' jobs are 404), cancel of a finished job, the log."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.utils import timezone

from allocations.models import Allocation
from launcher.models import Job
from tests.factories import FacilityFactory, charge

pytestmark = [pytest.mark.django_db]


@pytest.fixture
def allocation(project):
    facility = FacilityFactory(slug="local-hpc", backend="local", gpu_hour_rate=Decimal("0.50"))
    today = timezone.localdate()
    return Allocation.objects.create(
        project=project,
        facility=facility,
        gpu_hours=Decimal(10),
        start_date=today,
        end_date=today + dt.timedelta(days=30),
        status="active",
        account_name="abc-a1",
    )


def launch(api, user, **body):
    return api.as_user(user).post("/api/v1/jobs/", body, format="json")


def test_a_member_launches_a_job_with_its_estimate(api, researcher, allocation):
    response = launch(
        api,
        researcher,
        allocation=allocation.pk,
        gpus=2,
        params={"model": "resnet18", "epochs": 2, "wall_time_minutes": 90},
    )

    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["state"] == "queued" and body["gpus"] == 2
    assert Decimal(body["estimate_gpu_hours"]) == Decimal("3.000")  # 2 GPUs x 1.5 h
    assert Decimal(body["estimate_cost"]) == Decimal("1.5000")
    job = Job.objects.get(pk=body["id"])
    assert job.token.startswith("portal-job-") and job.created_by == researcher
    assert "wall_time_minutes" not in job.params and job.wall_time_minutes == 90


def test_bad_fields_are_refused_one_by_one(api, researcher, allocation):
    response = launch(
        api,
        researcher,
        allocation=allocation.pk,
        gpus=0,
        params={"model": "vgg99", "epochs": -1, "dataset": "../../etc"},
    )

    assert response.status_code == 400
    errors = response.json()
    assert set(errors) == {"gpus", "params"}
    assert set(errors["params"]) == {"model", "epochs", "dataset"}


def test_a_bad_sweep_grid_names_its_field(api, researcher, allocation):
    response = launch(
        api,
        researcher,
        allocation=allocation.pk,
        workload="sweep",
        grid={"models": ["densenet121"], "lrs": [], "lr_steps": [10], "weight_decays": [0.0]},
    )
    assert response.status_code == 400
    assert set(response.json()["grid"]) == {"lrs"}  # per field, inside the grid


def test_a_launch_beyond_what_is_left_is_refused_with_the_numbers(api, researcher, allocation):
    charge(
        allocation=allocation,
        source="slurm",
        external_id="x:1",
        period_start=timezone.now(),
        period_end=timezone.now(),
        gpu_seconds=8 * 3600,
    )
    response = launch(
        api, researcher, allocation=allocation.pk, gpus=2, params={"wall_time_minutes": 90}
    )

    assert response.status_code == 409
    body = response.json()
    assert body["estimate_gpu_hours"] == 3.0 and body["remaining_gpu_hours"] == 2.0
    assert not Job.objects.exists()


def test_unfinished_jobs_reserve_their_estimate(api, researcher, allocation):
    assert (
        launch(
            api, researcher, allocation=allocation.pk, gpus=2, params={"wall_time_minutes": 240}
        ).status_code
        == 201
    )  # 8 of 10 hours
    response = launch(
        api, researcher, allocation=allocation.pk, gpus=2, params={"wall_time_minutes": 90}
    )
    assert response.status_code == 409 and response.json()["remaining_gpu_hours"] == 2.0


def test_a_sweep_is_checked_on_its_total(api, researcher, allocation):
    grid = {"preset": "claire"}  # 540 cells x 1 GPU x 1 h >> 10 h
    response = launch(api, researcher, allocation=allocation.pk, workload="sweep", grid=grid)
    assert response.status_code == 409 and response.json()["estimate_gpu_hours"] == 540.0


def test_only_an_active_allocation_takes_jobs(api, researcher, allocation):
    Allocation.objects.filter(pk=allocation.pk).update(status="suspended")
    response = launch(api, researcher, allocation=allocation.pk)
    assert response.status_code == 409 and response.json()["status"] == "suspended"


def test_outsiders_and_reviewers_cannot_launch_and_others_jobs_are_404(
    api, researcher, outsider, reviewer, allocation
):
    response = launch(api, outsider, allocation=allocation.pk)  # as if it did not exist
    assert response.status_code == 400 and "allocation" in response.json()
    assert launch(api, reviewer, allocation=allocation.pk).status_code == 403  # sees, may not act
    assert not Job.objects.exists()
    job_id = launch(api, researcher, allocation=allocation.pk).json()["id"]

    assert api.as_user(outsider).get(f"/api/v1/jobs/{job_id}/").status_code == 404
    assert api.as_user(outsider).post(f"/api/v1/jobs/{job_id}/cancel/").status_code == 404
    assert api.as_user(outsider).get("/api/v1/jobs/").json()["count"] == 0
    assert api.as_user(reviewer).get(f"/api/v1/jobs/{job_id}/").status_code == 200
    assert api.as_user(None).get("/api/v1/jobs/").status_code == 401


def test_cancelling_a_queued_job_then_again_is_a_conflict(api, researcher, allocation):
    job_id = launch(api, researcher, allocation=allocation.pk).json()["id"]

    first = api.as_user(researcher).post(f"/api/v1/jobs/{job_id}/cancel/")
    again = api.as_user(researcher).post(f"/api/v1/jobs/{job_id}/cancel/")

    assert first.status_code == 200 and first.json()["state"] == "cancelled"
    assert again.status_code == 409


def test_the_log_endpoint_returns_the_tail(api, researcher, allocation):
    job_id = launch(api, researcher, allocation=allocation.pk).json()["id"]
    Job.objects.filter(pk=job_id).update(log_tail="epoch 1 loss 0.69")
    response = api.as_user(researcher).get(f"/api/v1/jobs/{job_id}/log/")
    assert response.status_code == 200 and response.json()["log"] == "epoch 1 loss 0.69"
