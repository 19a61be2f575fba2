"""No dead ends: a facility the portal cannot drive (its backend is manual, or not configured
yet: the demo's Baskerville has no host or key) says so on every page before anyone relies on
it, its allocations wait for staff instead of failing, and staff hear by email whenever an
allocation fails or waits for them."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from urllib.parse import urlencode

import pytest
from django.core import mail
from django.test import Client
from django.utils import timezone

from allocations import services
from allocations.connection import NOT_CONNECTED, facility_connected
from allocations.demo import seed_catalogue
from allocations.models import Allocation
from allocations.services import allocation_fail
from launcher.backends.contract import Capability
from launcher.backends.registry import backend_for, supports
from launcher.provisioning import allocation_provision
from tests.factories import FacilityFactory, RequestFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def unconfigured(db):
    """A Slurm facility with no host, user or key yet (as seed_demo leaves JADE2)."""
    return FacilityFactory(
        slug="jade2", name="JADE2", backend="slurm", trial_auto_approve=False, backend_settings={}
    )


def _approve(project, facility, researcher, reviewer, capture):
    req = RequestFactory(
        project=project,
        facility=facility,
        requested_by=researcher,
        status="submitted",
        submitted_at=timezone.now(),
    )
    with capture(execute=True):
        allocation = services.request_approve(request=req, by=reviewer)
    allocation.refresh_from_db()
    return allocation


def test_an_unconfigured_facility_is_served_by_the_manual_entry(unconfigured, facility):
    assert backend_for(unconfigured).capabilities == frozenset()
    assert not facility_connected(unconfigured) and not supports(unconfigured, Capability.SUBMIT)
    assert facility_connected(facility)  # the factory's default: the local backend


def test_approval_makes_the_allocation_wait_for_staff_who_are_emailed_once(
    project, researcher, reviewer, admin, unconfigured, django_capture_on_commit_callbacks
):
    allocation = _approve(
        project, unconfigured, researcher, reviewer, django_capture_on_commit_callbacks
    )

    assert allocation.status == "provisioning"
    assert "not connected" in allocation.status_reason and "by hand" in allocation.status_reason
    waiting = [m for m in mail.outbox if "waits for staff" in m.subject]
    assert len(waiting) == 1
    assert admin.email in waiting[0].to and reviewer.email in waiting[0].to
    assert "Activate" in waiting[0].body

    with django_capture_on_commit_callbacks(execute=True):
        allocation_provision(allocation_id=allocation.pk)  # a task retry
    assert len([m for m in mail.outbox if "waits for staff" in m.subject]) == 1
    allocation.refresh_from_db()
    assert allocation.status == "provisioning"


def test_staff_are_emailed_when_an_allocation_fails(
    project, admin, facility, django_capture_on_commit_callbacks
):
    today = timezone.localdate()
    allocation = Allocation.objects.create(
        project=project,
        facility=facility,
        gpu_hours=Decimal(5),
        start_date=today,
        end_date=today + dt.timedelta(days=5),
    )
    with django_capture_on_commit_callbacks(execute=True):
        allocation_fail(allocation=allocation, reason="The host key changed.")
    failed = [m for m in mail.outbox if "failed" in m.subject]
    assert len(failed) == 1 and admin.email in failed[0].to
    assert "The host key changed." in failed[0].body


def test_the_request_form_and_the_review_page_say_not_connected(
    project, researcher, reviewer, unconfigured, facility
):
    client = Client()
    client.force_login(researcher)
    form = client.get("/requests/new/").content.decode()
    assert f"JADE2 ({NOT_CONNECTED})" in form
    assert f"{facility.name} (not connected" not in form

    req = RequestFactory(
        project=project,
        facility=unconfigured,
        requested_by=researcher,
        status="submitted",
        submitted_at=timezone.now(),
    )
    client.force_login(reviewer)
    assert NOT_CONNECTED in client.get(f"/requests/{req.pk}/").content.decode()
    other = RequestFactory(
        project=project,
        facility=facility,
        requested_by=researcher,
        status="submitted",
        submitted_at=timezone.now(),
    )
    assert NOT_CONNECTED not in client.get(f"/requests/{other.pk}/").content.decode()


def test_the_recommender_rows_say_which_facilities_are_not_connected(client):
    from benchmarks.demo import seed

    seed_catalogue()
    seed()
    query = dict(
        model="resnet50",
        dims=2,
        image_size=224,
        dataset_samples=10000,
        epochs=1,
        precision="fp32",
        gpus=1,
        batch_size=32,
        data_sensitivity="public",
    )
    html = client.get(f"/recommend/?{urlencode(query)}").content.decode()
    assert NOT_CONNECTED in html
    rows = html.split('id="ranked"')[1].split("<tr")
    local_row = next(r for r in rows if '<th scope="row">local-cpu<' in r)
    basker_row = next(r for r in rows if '<th scope="row">B-A100-40<' in r)
    assert NOT_CONNECTED in basker_row and NOT_CONNECTED not in local_row


def test_the_launch_form_appears_only_where_the_backend_can_submit(
    project, researcher, unconfigured, facility, api
):
    today = timezone.localdate()
    made = {
        f.slug: Allocation.objects.create(
            project=project,
            facility=f,
            gpu_hours=Decimal(5),
            start_date=today,
            status="active",
            end_date=today + dt.timedelta(days=5),
            account_name=f"a-{f.slug}",
        )
        for f in (unconfigured, facility)
    }
    client = Client()
    client.force_login(researcher)
    assert 'id="h-launch"' not in client.get(f"/allocations/{made['jade2'].pk}/").content.decode()
    assert 'id="h-launch"' in client.get(f"/allocations/{made[facility.slug].pk}/").content.decode()

    refused = api.as_user(researcher).post(
        "/api/v1/jobs/",
        {
            "allocation": made["jade2"].pk,
            "gpus": 1,
            "wall_time_minutes": 10,
            "params": {"model": "resnet18", "epochs": 1},
        },
        format="json",
    )
    assert refused.status_code == 409 and "not connected" in refused.json()["detail"]
