"""A reviewer logs in and lands on the staff home, which lists the waiting request and the
failed allocation; the request is one click away."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.utils import timezone

from allocations.models import Allocation
from tests.browser import login

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_reviewer_home_lists_the_waiting_request_and_the_failed_allocation(
    page, live_server, reviewer, full_request, project, facility
):
    today = timezone.localdate()
    failed = Allocation.objects.create(
        project=project,
        facility=facility,
        gpu_hours=Decimal(5),
        start_date=today,
        end_date=today + dt.timedelta(days=5),
        status="failed",
        status_reason="Slurm account could not be set up: refused",
    )
    login(page, live_server, reviewer.username)
    assert page.get_by_role("heading", name="Staff home").is_visible()
    row = page.locator(f'tr[data-allocation="{failed.pk}"]')
    assert "could not be set up" in row.inner_text()
    page.get_by_role("link", name=f"Decide on request #{full_request.pk}").click()
    page.wait_for_url(f"{live_server.url}/requests/{full_request.pk}/")
    assert page.get_by_role("button", name="Approve").is_visible()
