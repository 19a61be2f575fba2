"""More GPUs than a facility ever runs at once are refused at launch (issue 22: a 2-GPU job on
a 1-slot `local` facility was accepted, reserved hours and failed at submission): a per-field
400 on `gpus` from the API (jobs and sweeps) and on the launch form, nothing saved. The
facility's backend is asked through the registry's `capacity` capability."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.utils import timezone

from allocations.models import Allocation
from launcher.backends.contract import Capability
from launcher.backends.registry import backend_for
from launcher.estimates import capacity_note
from launcher.models import Job, Sweep
from tests.factories import FacilityFactory

pytestmark = [pytest.mark.django_db]
GRID = {
    "models": ["resnet18"],
    "lrs": [0.001],
    "lr_steps": [5],
    "weight_decays": [0.0001],
    "folds": 2,
    "fixed": {"epochs": 1, "size": 32},
}


@pytest.fixture
def one_slot(project, tmp_path, settings):
    settings.LOCAL_JOBS_DIR = tmp_path / "local-jobs"
    facility = FacilityFactory(
        slug="local-one",
        name="Workstation",
        backend="local",
        backend_settings={"slots": 1},
        gpu_hour_rate=Decimal("1.00"),
    )
    today = timezone.localdate()
    return Allocation.objects.create(
        project=project,
        facility=facility,
        gpu_hours=Decimal(10),
        start_date=today,
        end_date=today + dt.timedelta(days=30),
        status="active",
        account_name="one-a1",
    )


def test_the_local_backend_reports_its_slots_through_the_registry(one_slot):
    backend = backend_for(one_slot.facility)
    assert Capability.CAPACITY in backend.capabilities
    capacity = backend.capacity(facility=one_slot.facility)
    assert (capacity.slots, capacity.in_use) == (1, 0)
    assert capacity_note(one_slot.facility).startswith("Workstation runs 1 run at a time")


def test_the_api_refuses_two_gpus_on_one_slot_with_a_400_on_gpus(api, researcher, one_slot):
    client = api.as_user(researcher)
    job = client.post("/api/v1/jobs/", {"allocation": one_slot.pk, "gpus": 2}, format="json")
    sweep = client.post(
        "/api/v1/sweeps/",
        {"allocation": one_slot.pk, "gpus": 2, "wall_time_minutes": 30, "grid": GRID},
        format="json",
    )

    for response in (job, sweep):
        assert response.status_code == 400, response.json()
        assert list(response.json()) == ["gpus"]
        assert "Workstation runs at most 1 GPU" in response.json()["gpus"][0]
        assert "ask for at most 1" in response.json()["gpus"][0]
    assert not Job.objects.exists() and not Sweep.objects.exists()
    one = client.post("/api/v1/jobs/", {"allocation": one_slot.pk, "gpus": 1}, format="json")
    assert one.status_code == 201, one.json()


def test_the_launch_form_shows_the_refusal_under_gpus(client, researcher, one_slot):
    client.force_login(researcher)
    response = client.post(
        f"/allocations/{one_slot.pk}/launch/",
        {
            "model": "resnet18",
            "dataset": "synthetic-ct",
            "epochs": "2",
            "gpus": "2",
            "wall_time_minutes": "60",
        },
    )

    assert response.status_code == 400
    page = response.content.decode()
    assert 'id="id_gpus_errors"' in page and "Workstation runs at most 1 GPU" in page
    assert not Job.objects.exists()
