"""What the probe-finding tests (issue 34) share: the sweep grid they launch and `allocation`,
an active allocation on a local facility that runs one run at a time (a fixture: import it by
name into the test module that takes it)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.utils import timezone

from allocations.models import Allocation
from tests.factories import FacilityFactory

GRID = {
    "models": ["resnet18"],
    "lrs": [0.001],
    "lr_steps": [5],
    "weight_decays": [0.0001],
    "folds": 2,
    "fixed": {"epochs": 1, "size": 32},
}


@pytest.fixture
def allocation(project, tmp_path, settings):
    """An active allocation on a local facility that runs one run at a time."""
    settings.LOCAL_JOBS_DIR = tmp_path / "local-jobs"
    facility = FacilityFactory(
        slug="probe-local",
        name="Workstation",
        backend="local",
        kind="local",
        backend_settings={"slots": 1},
        gpu_hour_rate=Decimal("1.00"),
    )
    today = timezone.localdate()
    return Allocation.objects.create(
        project=project,
        facility=facility,
        gpu_hours=Decimal(100),
        start_date=today,
        end_date=today + dt.timedelta(days=30),
        status="active",
        account_name="probe-a1",
    )
