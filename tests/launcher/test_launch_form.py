"""The launch form on the allocation page: members of an active allocation see it; it posts to a
thin view over the same `job_launch` service as the API, with per-field errors, and the API's
409 refusal (not active, not enough GPU-hours) shown as a message on the allocation page."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.utils import timezone

from allocations.models import Allocation
from launcher.models import Job
from launcher.params import DEFAULT_JOB, DEFAULT_SEED
from tests.factories import FacilityFactory

pytestmark = [pytest.mark.django_db]
VALID = {
    "model": "resnet18",
    "dataset": "synthetic-ct",
    "epochs": "2",
    "gpus": "2",
    "wall_time_minutes": "90",
    "lr": "0.001",
    "batch_size": "",
}


@pytest.fixture
def allocation(project):
    # 8 slots: the 8-GPU launch below is refused for its hours (409), not its size (400).
    facility = FacilityFactory(
        slug="local-form",
        backend="local",
        gpu_hour_rate=Decimal("0.50"),
        backend_settings={"slots": 8},
    )
    today = timezone.localdate()
    return Allocation.objects.create(
        project=project,
        facility=facility,
        gpu_hours=Decimal(10),
        start_date=today,
        end_date=today + dt.timedelta(days=30),
        status="active",
        account_name="form-a1",
    )


def test_members_of_an_active_allocation_see_the_form(client, researcher, reviewer, allocation):
    client.force_login(researcher)
    page = client.get(f"/allocations/{allocation.pk}/").content.decode()
    assert 'id="launch-form"' in page and f'action="/allocations/{allocation.pk}/launch/"' in page
    assert 'name="csrfmiddlewaretoken"' in page and 'name="wall_time_minutes"' in page

    client.force_login(reviewer)  # may see the allocation, may not launch on it
    assert 'id="launch-form"' not in client.get(f"/allocations/{allocation.pk}/").content.decode()
    Allocation.objects.filter(pk=allocation.pk).update(status="suspended")
    client.force_login(researcher)
    assert 'id="launch-form"' not in client.get(f"/allocations/{allocation.pk}/").content.decode()


def test_a_valid_form_launches_through_the_service(client, researcher, allocation):
    client.force_login(researcher)

    response = client.post(f"/allocations/{allocation.pk}/launch/", VALID, follow=True)

    job = Job.objects.get()
    assert response.redirect_chain[-1][0] == f"/jobs/{job.pk}/"
    assert f"Job #{job.pk} launched" in response.content.decode()
    assert job.state == "queued" and job.created_by == researcher and job.gpus == 2
    # What the form left blank is the default job's (launcher/params.py), stored as it will run.
    assert job.params == {
        **DEFAULT_JOB,
        "seed": DEFAULT_SEED,
        "model": "resnet18",
        "epochs": 2,
        "lr": 0.001,
    }
    assert job.wall_time_minutes == 90 and job.estimate_gpu_hours == Decimal("3.000")


def test_bad_fields_come_back_one_by_one(client, researcher, allocation):
    client.force_login(researcher)

    response = client.post(
        f"/allocations/{allocation.pk}/launch/",
        {**VALID, "epochs": "0", "dataset": "../../etc", "gpus": "0"},
    )

    assert response.status_code == 400
    page = response.content.decode()
    for field in ("epochs", "dataset", "gpus"):
        assert f'id="id_{field}_errors"' in page, field
    assert 'id="id_model_errors"' not in page
    assert "is not one of the available choices" in page  # a path is no dataset
    assert not Job.objects.exists()


def test_a_refused_launch_is_on_the_form_with_the_apis_status(client, researcher, allocation):
    client.force_login(researcher)

    response = client.post(
        f"/allocations/{allocation.pk}/launch/", {**VALID, "gpus": "8", "wall_time_minutes": "600"}
    )

    assert response.status_code == 409  # as POST /api/v1/jobs/ answers (core.refusals)
    page = response.content.decode()
    assert (
        "needs an estimated 80 GPU-hours but only 10 are left on the allocation (0 reserved" in page
    )
    assert not Job.objects.exists()


def test_others_cannot_launch(client, reviewer, outsider, allocation):
    client.force_login(outsider)
    assert client.post(f"/allocations/{allocation.pk}/launch/", VALID).status_code == 404
    client.force_login(reviewer)
    response = client.post(f"/allocations/{allocation.pk}/launch/", VALID, follow=True)
    assert "Only members of the project" in response.content.decode()
    assert not Job.objects.exists()
