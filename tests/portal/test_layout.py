"""The layout holds at 390 px (a phone) and 1280 px (a laptop): no page scrolls sideways, the
top bar stays on one line at 1280 px, and the admin's allocation list shows its status column.
Screenshots of every page at both widths go to var/screenshots/layout/ (the tests' output)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import timezone

from allocations.models import Allocation
from launcher.models import Job
from tests.browser import login
from tests.factories import RequestFactory, charge

pytestmark = pytest.mark.django_db(transaction=True)
SHOTS = Path(settings.BASE_DIR) / "var" / "screenshots" / "layout"
WIDTHS = (390, 1280)


def _overflow(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth - window.innerWidth")


def _shoot(page, url: str, name: str) -> None:
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(url)
        page.wait_for_load_state("load")
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"{name}-{width}.png"), full_page=True)
        assert _overflow(page) <= 0, f"{name} scrolls sideways at {width} px"
        if width == 1280:
            tops = page.evaluate(
                "[...document.querySelectorAll('.site-header nav > *, .site-header li')]"
                ".map(e => Math.round(e.getBoundingClientRect().top))"
            )
            assert max(tops) - min(tops) <= 12, f"the top bar wraps at 1280 px on {name}: {tops}"


@pytest.fixture
def busy_world(project, researcher, reviewer, admin, facility):
    today = timezone.localdate()
    allocation = Allocation.objects.create(
        project=project,
        facility=facility,
        gpu_hours=Decimal(50),
        start_date=today,
        end_date=today + dt.timedelta(days=30),
        status="active",
        account_name="abc-def-001-a-very-long-account-name-for-layout",
    )
    job = Job.objects.create(
        allocation=allocation,
        created_by=researcher,
        token="portal-job-layout1",
        state="failed",
        scheduler_id="123456",
        params={"model": "densenet121", "epochs": 4, "lr": 0.0001},
        state_reason="exit code 1: " + "x" * 200,
        finished_at=timezone.now(),
        log_tail="Traceback (most recent call last): " + "/very/long/path/" * 30,
    )
    RequestFactory(
        project=project,
        facility=facility,
        requested_by=researcher,
        status="submitted",
        submitted_at=timezone.now(),
    )
    Allocation.objects.create(
        project=project,
        facility=facility,
        gpu_hours=Decimal(5),
        start_date=today,
        end_date=today,
        status="failed",
        status_reason="Slurm account could not be set up",
    )
    charge(
        allocation=allocation,
        source="local",
        external_id="layout-1",
        period_start=timezone.now(),
        period_end=timezone.now(),
        gpu_seconds=5400,
        cost=Decimal("2.25"),
    )
    Job.objects.filter(pk=job.pk).update(
        gpu_seconds=5400,
        utilisation_mean=64.0,
        utilisation_source="cpu",
        submitted_at=timezone.now(),
        started_at=timezone.now(),
    )
    return {"allocation": allocation, "job": job}


def test_pages_hold_at_390_and_1280_px(page, live_server, busy_world, researcher, admin):
    login(page, live_server, researcher.username)
    _shoot(page, f"{live_server.url}/", "dashboard")
    _shoot(page, f"{live_server.url}/jobs/{busy_world['job'].pk}/", "job")
    _shoot(page, f"{live_server.url}/projects/{busy_world['allocation'].project_id}/", "project")

    page.context.clear_cookies()
    page.set_viewport_size({"width": 1280, "height": 900})
    login(page, live_server, admin.username)
    _shoot(page, f"{live_server.url}/staff/", "staff-home")
    _shoot(page, f"{live_server.url}/reports/usage/?group_by=user", "usage-report")

    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{live_server.url}/admin/allocations/allocation/")
    page.screenshot(path=str(SHOTS / "admin-allocations-1280.png"), full_page=True)
    box = page.locator("th.column-status").bounding_box()
    assert box is not None and box["x"] + box["width"] <= 1280
    assert page.locator("td.field-status").first.is_visible()
