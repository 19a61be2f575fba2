"""After "changes requested" the edit form comes back in the browser with every field, its
facility and node type included (also on a facility staff set up by hand, labelled "not
connected"), and the requester resubmits it."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from allocations import services
from allocations.models import AllocationRequest
from tests.browser import login
from tests.factories import JUSTIFICATION, FacilityFactory, NodeTypeFactory

pytestmark = pytest.mark.django_db(transaction=True)


def test_changes_requested_then_resubmitted_in_the_browser(
    page, live_server, project, researcher, reviewer
):
    manual = FacilityFactory(slug="jade2", name="JADE2", backend="manual", trial_auto_approve=False)
    node = NodeTypeFactory(facility=manual, name="J-V100")
    req = services.request_create(
        by=researcher,
        project=project,
        submit=True,
        facility=manual,
        node_type=node,
        kind="full",
        gpu_hours=900,
        start_date=timezone.localdate(),
        end_date=timezone.localdate() + dt.timedelta(days=30),
        justification=JUSTIFICATION,
    )
    services.request_request_changes(request=req, by=reviewer, comment="Ask for 600 at most.")

    login(page, live_server, researcher.username)
    page.goto(f"{live_server.url}/requests/{req.pk}/edit/")
    assert page.locator("#id_facility").input_value() == "jade2"
    assert page.locator("#id_node_type").input_value() == str(node.pk)
    page.get_by_label("GPU-hours requested").fill("600")
    page.get_by_role("button", name="Submit request").click()
    page.get_by_text("Request submitted").wait_for()

    req = AllocationRequest.objects.get(pk=req.pk)
    assert (req.status, req.gpu_hours, req.facility_id, req.node_type_id) == (
        "submitted",
        600,
        manual.pk,
        node.pk,
    )
