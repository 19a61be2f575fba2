"""A researcher files a full request in the browser and a reviewer approves it."""

from __future__ import annotations

import pytest

from allocations.models import AllocationRequest
from tests.browser import login
from tests.factories import JUSTIFICATION

pytestmark = pytest.mark.django_db(transaction=True)


def test_researcher_submits_and_reviewer_approves(
    live_server, page, researcher, reviewer, project, node_type
):
    login(page, live_server, "rosalind")
    page.goto(f"{live_server.url}/requests/new/?facility=baskerville&node_type=B-A100-40")
    assert page.get_by_label("Which facility?").input_value() == "baskerville"
    page.get_by_label("Full").check()
    page.get_by_label("GPU-hours requested").fill("1200")
    page.get_by_label("Platform justification").fill(JUSTIFICATION)
    page.get_by_role("button", name="Submit request").click()
    page.get_by_text("Request submitted").wait_for()
    req = AllocationRequest.objects.get()
    assert req.status == "submitted" and req.node_type == node_type

    page.context.clear_cookies()
    login(page, live_server, "grace")
    page.get_by_role("link", name="Review").click()
    page.get_by_role("link", name=f"#{req.pk}").click()
    page.get_by_label("GPU-hours to grant").fill("1000")
    page.get_by_role("button", name="Approve").click()
    page.get_by_text(f"Request #{req.pk} was approved").wait_for()

    req.refresh_from_db()
    assert req.status == "approved" and req.allocation.gpu_hours == 1000
    page.goto(f"{live_server.url}/requests/{req.pk}/")
    assert page.locator(".timeline").get_by_text("approved").count() >= 1
