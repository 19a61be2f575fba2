"""Admin actions go through the services, so every move is checked and audited."""
from __future__ import annotations

import pytest
from django.test import Client

from allocations import services
from allocations.models import Allocation
from allocations.selectors import timeline
from tests.factories import FacilityFactory, RequestFactory

pytestmark = pytest.mark.django_db


def test_a_manual_facility_waits_for_staff_who_activate_it_from_the_admin(
    project, researcher, reviewer, admin, django_capture_on_commit_callbacks
):
    azure = FacilityFactory(slug="azure", name="Azure", backend="manual", kind="cloud")
    req = RequestFactory(project=project, facility=azure, requested_by=researcher,
                         status="submitted")
    with django_capture_on_commit_callbacks(execute=True):
        allocation = services.request_approve(request=req, by=reviewer)
    allocation.refresh_from_db()
    assert allocation.status == "provisioning"

    client = Client()
    client.force_login(admin)
    response = client.post("/admin/allocations/allocation/", {
        "action": "activate", "_selected_action": [allocation.pk]})
    assert response.status_code == 302
    allocation.refresh_from_db()
    assert allocation.status == "active"
    assert timeline(allocation).last().actor == admin


def test_an_admin_action_on_a_disallowed_move_warns_and_changes_nothing(project, facility, admin):
    from tests.factories import AllocationFactory

    closed = AllocationFactory(project=project, facility=facility, status="closed")
    client = Client()
    client.force_login(admin)
    response = client.post("/admin/allocations/allocation/", {
        "action": "suspend", "_selected_action": [closed.pk]}, follow=True)
    assert "cannot move to suspended" in response.content.decode()
    assert Allocation.objects.get(pk=closed.pk).status == "closed"


def test_admin_lists_have_filters(admin):
    client = Client()
    client.force_login(admin)
    for url in ("/admin/allocations/allocationrequest/?status__exact=submitted",
                "/admin/allocations/allocation/?status__exact=active",
                "/admin/allocations/facility/", "/admin/allocations/event/"):
        assert client.get(url).status_code == 200, url
