"""One fact, one figure (issue 22): for one allocation, the dashboard, the project page, the
allocation page, the usage report (page and CSV) and the API show the same used and
remaining GPU-hours once each is rounded by the one rule (core/figures.py), and the
files carry the exact value, not a float artefact."""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
from decimal import Decimal

import pytest
from django.utils import timezone

from core.figures import rounded
from tests.factories import AllocationFactory, charge

pytestmark = pytest.mark.django_db
SECONDS = 194  # 0.053888... GPU-hours: "0.05" on every page, 0.053889 in the CSV


@pytest.fixture
def allocation(project, facility):
    today = timezone.localdate()
    allocation = AllocationFactory(
        project=project,
        facility=facility,
        gpu_hours=Decimal(10),
        start_date=today - dt.timedelta(days=5),
        end_date=today + dt.timedelta(days=30),
    )
    charge(
        allocation=allocation,
        source="local",
        external_id="one-figure",
        gpu_seconds=SECONDS,
        cost=Decimal("0.0500"),
    )  # as a backend charges: the ledger moves
    return allocation


def amounts(html: str) -> list[str]:
    """The rounded figures the `amount` filter printed."""
    return re.findall(r'<span class="amount" title="[^"]*">([^<]*)</span>', html)


def test_every_surface_shows_the_same_used_and_remaining(client, api, pi, allocation):
    used, remaining = rounded(Decimal(SECONDS) / 3600), rounded(10 - Decimal(SECONDS) / 3600)
    assert (used, remaining) == ("0.05", "9.95")
    client.force_login(pi)

    dashboard = client.get("/").content.decode()
    assert f"{used}</span> used" in dashboard
    project = client.get(f"/projects/{allocation.project_id}/").content.decode()
    assert f"{used}</span> used" in project
    page = client.get(f"/allocations/{allocation.pk}/").content.decode()
    used_row = re.search(r'<dd id="used">(.*?)</dd>', page, re.S).group(1)
    remaining_row = re.search(r'<dd id="remaining">(.*?)</dd>', page, re.S).group(1)
    assert amounts(used_row) == [used] and amounts(remaining_row) == [remaining]

    report = client.get("/reports/usage/?group_by=project").content.decode()
    heading = re.search(r"<h1>.*?</h1>", report, re.S).group(0)
    assert f"{used} GPU-hours" in heading
    table = re.search(r'<table id="table-usage">.*?</table>', report, re.S).group(0)
    assert f">{used}</td>" in table

    csv_text = client.get(
        "/reports/usage/?group_by=project&format=csv&table=usage"
    ).content.decode()
    row = list(csv.reader(io.StringIO(csv_text)))[1]
    assert row[2] == "0.053889" and rounded(row[2]) == used

    body = api.as_user(pi).get(f"/api/v1/allocations/{allocation.pk}/").json()
    assert rounded(body["gpu_hours_used"]) == used
    assert rounded(body["gpu_hours_remaining"]) == remaining


def test_a_closed_allocation_shows_what_it_used_not_what_remains(client, pi, allocation):
    type(allocation).objects.filter(pk=allocation.pk).update(status="closed")
    client.force_login(pi)
    page = client.get(f"/allocations/{allocation.pk}/").content.decode()
    remaining_row = re.search(r'<dd id="remaining">(.*?)</dd>', page, re.S).group(1)
    assert remaining_row.startswith("none: the allocation is closed; it used")
    assert amounts(remaining_row) == ["0.05"] and "9.95" not in remaining_row
