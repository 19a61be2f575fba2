"""Allocation change requests beside the top-up: extend the end date, renew for a new period,
close early; each reviewed like a request, within the facility's policy; approval applies the
change. And the request form keeps every field after "changes requested"."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.core.exceptions import PermissionDenied
from django.test import Client
from django.utils import timezone

from allocations import services
from allocations.models import Allocation, AllocationRequest
from tests.factories import JUSTIFICATION, AllocationFactory

pytestmark = pytest.mark.django_db
TODAY = timezone.localdate

REASON = "The last fold of the sweep needs three more weeks."


def _change(project, allocation, by, purpose, **fields):
    values = dict(
        facility=allocation.facility,
        kind="full",
        purpose=purpose,
        extends=allocation,
        gpu_hours=0,
        start_date=TODAY(),
        end_date=allocation.end_date,
        justification=REASON,
    )
    values.update(fields)
    return services.request_create(by=by, project=project, submit=True, **values)


@pytest.fixture
def allocation(project, facility):
    return AllocationFactory(
        project=project,
        facility=facility,
        gpu_hours=Decimal("100"),
        end_date=TODAY() + dt.timedelta(days=20),
    )


def test_an_approved_extension_moves_the_end_date_and_adds_the_hours_granted(
    project, researcher, reviewer, allocation
):
    new_end = allocation.end_date + dt.timedelta(days=30)
    req = _change(project, allocation, researcher, "extension", end_date=new_end, gpu_hours=50)
    assert req.status == "submitted"  # reviewed like any request

    services.request_approve(request=req, by=reviewer, gpu_hours=20)

    allocation.refresh_from_db()
    req.refresh_from_db()
    assert allocation.end_date == new_end and allocation.gpu_hours == Decimal("120")
    assert (req.status, req.granted_gpu_hours, req.allocation_id) == ("approved", 20, allocation.pk)


def test_an_extension_must_end_later_and_within_the_facility_latest_end_date(
    project, researcher, allocation, facility
):
    with pytest.raises(services.PolicyError) as earlier:
        _change(project, allocation, researcher, "extension", end_date=allocation.end_date)
    assert "end_date" in earlier.value.message_dict
    facility.latest_end_date = allocation.end_date + dt.timedelta(days=5)
    facility.save()
    with pytest.raises(services.PolicyError) as too_late:
        _change(
            project,
            allocation,
            researcher,
            "extension",
            end_date=allocation.end_date + dt.timedelta(days=6),
        )
    assert "at the latest" in " ".join(too_late.value.message_dict["end_date"])
    assert not AllocationRequest.objects.exists()


def test_a_trial_extension_stays_within_the_trial_length_and_cap(project, researcher, facility):
    trial = AllocationFactory(
        project=project,
        facility=facility,
        kind="trial",
        gpu_hours=Decimal("300"),
        end_date=TODAY() + dt.timedelta(days=30),
    )
    with pytest.raises(services.PolicyError) as error:
        _change(
            project,
            trial,
            researcher,
            "extension",
            gpu_hours=200,
            end_date=TODAY() + dt.timedelta(days=facility.trial_days + 1),
        )
    assert {"end_date", "gpu_hours"} <= set(error.value.message_dict)


def test_an_extension_revives_an_expired_allocation(project, researcher, reviewer, allocation):
    Allocation.objects.filter(pk=allocation.pk).update(
        status="expired", end_date=TODAY() - dt.timedelta(days=1)
    )
    allocation.refresh_from_db()
    req = _change(
        project, allocation, researcher, "extension", end_date=TODAY() + dt.timedelta(days=10)
    )
    services.request_approve(request=req, by=reviewer)
    allocation.refresh_from_db()
    assert allocation.status == "active" and allocation.end_date == TODAY() + dt.timedelta(days=10)


def test_an_approved_closure_closes_the_allocation_and_only_managers_may_ask(
    project, pi, researcher, reviewer, allocation
):
    with pytest.raises(PermissionDenied):
        _change(project, allocation, researcher, "closure")
    req = _change(project, allocation, pi, "closure")
    services.request_approve(request=req, by=reviewer)
    allocation.refresh_from_db()
    assert allocation.status == "closed"
    with pytest.raises(services.PolicyError) as again:
        _change(project, allocation, pi, "closure")
    assert "extends" in again.value.message_dict


def test_a_renewal_link_carries_the_project_and_settings(
    project, researcher, allocation, node_type
):
    Allocation.objects.filter(pk=allocation.pk).update(node_type=node_type)
    client = Client()
    client.force_login(researcher)
    page = client.get(f"/allocations/{allocation.pk}/")
    assert b"Renew for a new period" in page.content and b"Close early" in page.content
    form = client.get(f"/requests/new/?purpose=renewal&extends={allocation.pk}").context["form"]
    assert form.initial["project"] == project.pk and form.initial["facility"] == "baskerville"
    assert form.initial["node_type"] == node_type.pk and form.initial["gpu_hours"] == 100
    assert form.initial["start_date"] == allocation.end_date + dt.timedelta(days=1)


def test_after_changes_requested_the_form_comes_back_whole_and_resubmits(
    project, researcher, reviewer, facility, node_type
):
    req = services.request_create(
        by=researcher,
        project=project,
        submit=True,
        facility=facility,
        node_type=node_type,
        kind="full",
        gpu_hours=500,
        start_date=TODAY(),
        end_date=TODAY() + dt.timedelta(days=30),
        justification=JUSTIFICATION,
    )
    services.request_request_changes(request=req, by=reviewer, comment="Fewer hours, please.")
    client = Client()
    client.force_login(researcher)
    page = client.get(f"/requests/{req.pk}/edit/")
    html = page.content.decode()
    assert '<option value="baskerville" selected>' in html
    assert f'<option value="{node_type.pk}" selected>' in html

    form = page.context["form"]
    data = {name: form[name].value() for name in form.fields}
    data = {k: ("" if v is None else v) for k, v in data.items()}
    data["gpu_hours"] = 300
    response = client.post(f"/requests/{req.pk}/edit/", data)
    assert response.status_code == 302, response.context["form"].errors
    req.refresh_from_db()
    assert (req.status, req.gpu_hours, req.facility_id, req.node_type_id) == (
        "submitted",
        300,
        facility.pk,
        node_type.pk,
    )


def test_an_approved_request_shows_granted_against_requested(
    api, project, researcher, reviewer, full_request
):
    services.request_approve(request=full_request, by=reviewer, gpu_hours=600)
    client = Client()
    client.force_login(researcher)
    assert (
        "600 granted of 1,000 requested"
        in client.get(f"/requests/{full_request.pk}/").content.decode()
    )
    body = api.as_user(researcher).get(f"/api/v1/requests/{full_request.pk}/").json()
    assert (body["gpu_hours"], body["granted_gpu_hours"]) == (1000, 600)


def test_a_closed_allocation_can_be_renewed_but_not_topped_up(
    project, researcher, reviewer, allocation
):
    Allocation.objects.filter(pk=allocation.pk).update(status="closed")
    allocation.refresh_from_db()
    with pytest.raises(services.PolicyError) as top_up:
        _change(project, allocation, researcher, "top_up", gpu_hours=10)
    assert "renew it" in " ".join(top_up.value.message_dict["extends"])
    client = Client()
    client.force_login(researcher)
    page = client.get(f"/allocations/{allocation.pk}/").content.decode()
    assert "Renew for a new period" in page and "Close early" not in page
    form = client.get(f"/requests/new/?purpose=renewal&extends={allocation.pk}").context["form"]
    data = {name: form[name].value() for name in form.fields}
    data = {k: ("" if v is None else v) for k, v in data.items()}
    data["justification"] = JUSTIFICATION  # 25 different words (policy.py)
    response = client.post("/requests/new/", data)
    assert response.status_code == 302, response.context["form"].errors
    renewal = AllocationRequest.objects.get(purpose="renewal")
    services.request_approve(request=renewal, by=reviewer)
    renewal.refresh_from_db()
    assert renewal.allocation_id != allocation.pk
    assert renewal.allocation.start_date == allocation.end_date + dt.timedelta(days=1)
    assert renewal.allocation.gpu_hours == allocation.gpu_hours
