"""The sweep form on the allocation page: its defaults make a runnable grid, the CLAIRE preset is
one link away, "Estimate" shows the total (cells x GPU-hours per cell, with its basis) before
anything launches, "Launch sweep" launches through the same service as the API, and bad fields
come back on their own inputs."""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal

import pytest
from django.utils import timezone

from allocations.models import Allocation
from launcher.models import Sweep
from tests.factories import FacilityFactory

pytestmark = [pytest.mark.django_db]
FORM = {
    "name": "lrs",
    "models": ["resnet18"],
    "lrs": "1e-3, 1e-4",
    "lr_steps": "5",
    "weight_decays": "0.0001",
    "folds": "3",
    "epochs": "4",
    "patience": "",
    "size": "64",
    "batch_size": "16",
    "dataset": "synthetic-ct",
    "synthetic_n": "300",
    "gpus": "1",
    "wall_time_minutes": "30",
    "concurrency": "2",
}


@pytest.fixture
def allocation(project):
    facility = FacilityFactory(
        slug="local-sweep-form", backend="local", gpu_hour_rate=Decimal("0.50")
    )
    today = timezone.localdate()
    return Allocation.objects.create(
        project=project,
        facility=facility,
        gpu_hours=Decimal(20),
        start_date=today,
        end_date=today + dt.timedelta(days=30),
        status="active",
        account_name="sf-a1",
    )


def test_members_see_the_sweep_form_with_the_claire_link(client, researcher, reviewer, allocation):
    client.force_login(researcher)
    page = client.get(f"/allocations/{allocation.pk}/").content.decode()
    assert 'id="sweep-form"' in page and f'action="/allocations/{allocation.pk}/sweep/"' in page
    assert f'href="/allocations/{allocation.pk}/sweep/?preset=claire"' in page
    client.force_login(reviewer)
    assert 'id="sweep-form"' not in client.get(f"/allocations/{allocation.pk}/").content.decode()


def test_the_claire_preset_fills_the_form_and_shows_its_total(client, researcher, allocation):
    client.force_login(researcher)
    page = client.get(f"/allocations/{allocation.pk}/sweep/?preset=claire").content.decode()

    for model in ("densenet121", "densenet161", "densenet169", "densenet201"):
        assert f'value="{model}" id="sweep_models_' in page and "checked" in page
    assert 'name="lrs" value="0.001, 0.0001, 1e-05"' in page
    assert "540.00</span> GPU-hours</strong> in total" in page
    assert (
        "540 cells x 1.00 GPU-hours per cell (1 GPU x 60 min wall time, the limit each cell is stopped at)"
        in page
    )
    assert "this sweep does not fit" in page  # 20 GPU-hours left
    assert not Sweep.objects.exists()


def test_estimate_shows_the_total_and_launches_nothing(client, researcher, allocation):
    client.force_login(researcher)
    response = client.post(f"/allocations/{allocation.pk}/sweep/", {**FORM, "estimate": "1"})

    page = response.content.decode()
    assert response.status_code == 200
    assert (
        "3.00</span> GPU-hours</strong> in total" in page
        and 'USD <span class="amount" title="1.5 (exact)">1.50</span>' in page
    )
    assert (
        "6 cells x 0.50 GPU-hours per cell (1 GPU x 30 min wall time, the limit each cell is stopped at)"
        in page
    )
    assert not Sweep.objects.exists()


def test_launch_creates_the_sweep_through_the_service(client, researcher, allocation):
    client.force_login(researcher)
    response = client.post(
        f"/allocations/{allocation.pk}/sweep/", {**FORM, "launch": "1"}, follow=True
    )

    sweep = Sweep.objects.get()
    assert response.redirect_chain[-1][0] == f"/sweeps/{sweep.pk}/"
    assert f"Sweep #{sweep.pk} launched: 6 runs." in response.content.decode()
    assert sweep.size == 6 and sweep.concurrency == 2 and sweep.created_by == researcher
    assert sweep.grid["fixed"] == {"epochs": 4, "size": 64, "batch_size": 16}
    assert sweep.params == {"dataset": "synthetic-ct", "synthetic_n": 300}


def test_bad_fields_come_back_on_their_inputs(client, researcher, allocation):
    client.force_login(researcher)
    response = client.post(
        f"/allocations/{allocation.pk}/sweep/",
        {**FORM, "lrs": "fast", "models": [], "folds": "6", "synthetic_n": "24", "launch": "1"},
    )

    assert response.status_code == 400
    page = response.content.decode()
    for field in ("lrs", "models"):
        assert f'id="sweep_{field}_errors"' in page, field
    assert not Sweep.objects.exists()

    response = client.post(
        f"/allocations/{allocation.pk}/sweep/",
        {**FORM, "folds": "6", "synthetic_n": "24", "launch": "1"},
    )
    page = response.content.decode()
    assert response.status_code == 400 and 'id="sweep_folds_errors"' in page
    assert "6 folds need at least 6 patients of each class" in page
    assert not Sweep.objects.exists()


def test_a_sweep_beyond_what_is_left_is_a_message(client, researcher, allocation):
    client.force_login(researcher)
    response = client.post(
        f"/allocations/{allocation.pk}/sweep/", {**FORM, "wall_time_minutes": "600", "launch": "1"}
    )
    page = response.content.decode()
    assert re.search(r"needs an estimated 60(\.0+)? GPU-hours but only 20(\.0+)? are left", page)
    assert not Sweep.objects.exists()


def test_the_form_launches_a_sweep_with_early_stopping(client, researcher, allocation):
    client.force_login(researcher)
    asha = {"early_stop": "on", "eta": "3", "min_epochs": "1"}
    estimate = client.post(
        f"/allocations/{allocation.pk}/sweep/", {**FORM, **asha, "estimate": "1"}
    )
    assert 'id="sweep-estimate-expected"' in estimate.content.decode()

    response = client.post(
        f"/allocations/{allocation.pk}/sweep/", {**FORM, **asha, "launch": "1"}, follow=True
    )
    sweep = Sweep.objects.get()
    assert response.redirect_chain[-1][0] == f"/sweeps/{sweep.pk}/"
    assert sweep.staged and sweep.grid["early_stopping"] == {
        "method": "asha",
        "eta": 3,
        "min_epochs": 1,
    }
    assert sweep.jobs.filter(held=False).count() == 2  # the concurrency, not the 6 cells


def test_a_first_rung_past_the_epochs_comes_back_on_its_input(client, researcher, allocation):
    client.force_login(researcher)
    response = client.post(
        f"/allocations/{allocation.pk}/sweep/",
        {**FORM, "early_stop": "on", "eta": "3", "min_epochs": "4", "launch": "1"},
    )
    page = response.content.decode()
    assert response.status_code == 400 and 'id="sweep_min_epochs_errors"' in page
    assert not Sweep.objects.exists()
