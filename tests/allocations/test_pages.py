"""The browser pages of the core, through Django's test client."""

from __future__ import annotations

import datetime as dt

import pytest
from django.test import Client
from django.utils import timezone

from allocations.models import AllocationRequest
from tests.factories import JUSTIFICATION, AllocationFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def client_for():
    def make(user):
        client = Client()
        client.force_login(user)
        return client

    return make


def form_data(project_obj, facility_obj, **overrides):
    today = timezone.localdate()
    data = {
        "project": project_obj.pk,
        "facility": facility_obj.slug,
        "kind": "full",
        "purpose": "new",
        "cpu_hours": 0,
        "gpu_hours": 1000,
        "start_date": today.isoformat(),
        "end_date": (today + dt.timedelta(days=30)).isoformat(),
        "data_sensitivity": "public",
        "justification": JUSTIFICATION,
    }
    data.update(overrides)
    return data


def test_query_parameters_prefill_the_form(client_for, researcher, project, node_type):
    page = client_for(researcher).get(
        "/requests/new/?facility=baskerville&kind=trial&gpu_hours=300&node_type=B-A100-40"
    )
    form = page.context["form"]
    assert form.initial["facility"] == "baskerville"
    assert form.initial["kind"] == "trial" and form.initial["gpu_hours"] == 300
    assert form.initial["node_type"] == node_type.pk
    assert form.initial["project"] == project.pk  # the only project the researcher is in
    html = page.content.decode()
    for section in ("Project", "Service", "Information"):
        assert f"<legend>{section}</legend>" in html


def test_submitting_the_form_files_a_request(client_for, researcher, project, facility):
    response = client_for(researcher).post("/requests/new/", form_data(project, facility))
    req = AllocationRequest.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/requests/{req.pk}/"
    assert req.status == "submitted" and req.requested_by == researcher


def test_saving_a_draft_does_not_submit(client_for, researcher, project, facility):
    client_for(researcher).post(
        "/requests/new/", {**form_data(project, facility), "save_draft": "1"}
    )
    assert AllocationRequest.objects.get().status == "draft"


def test_policy_errors_show_on_their_field_and_save_nothing(
    client_for, researcher, project, facility
):
    response = client_for(researcher).post(
        "/requests/new/",
        form_data(project, facility, kind="trial", gpu_hours=401, justification="Trying it."),
    )
    assert response.status_code == 200
    assert "capped at 400" in response.context["form"].errors["gpu_hours"][0]
    assert 'role="alert"' in response.content.decode()
    assert not AllocationRequest.objects.exists()


@pytest.mark.parametrize(
    "field,value",
    [
        ("gpu_hours", "many"),
        ("start_date", "31/02/2025"),
        ("kind", "huge"),
        ("facility", "atlantis"),
    ],
)
def test_malformed_fields_are_form_errors_not_500s(
    client_for, researcher, project, facility, field, value
):
    response = client_for(researcher).post(
        "/requests/new/", form_data(project, facility, **{field: value})
    )
    assert response.status_code == 200
    assert field in response.context["form"].errors
    assert not AllocationRequest.objects.exists()


def test_reviewer_sees_the_queue_oldest_first_with_age(
    client_for, reviewer, project, facility, researcher
):
    from tests.factories import RequestFactory

    now = timezone.now()
    newer = RequestFactory(
        project=project,
        facility=facility,
        requested_by=researcher,
        status="submitted",
        submitted_at=now - dt.timedelta(hours=1),
    )
    older = RequestFactory(
        project=project,
        facility=facility,
        requested_by=researcher,
        status="submitted",
        submitted_at=now - dt.timedelta(days=3),
    )
    just = RequestFactory(
        project=project,
        facility=facility,
        requested_by=researcher,
        status="submitted",
        submitted_at=now,
    )
    page = client_for(reviewer).get("/review/")
    assert list(page.context["queue"]) == [older, newer, just]
    html = page.content.decode()
    assert "3 d 0 h" in html and "1 h 0 min" in html
    assert html.count('<span class="muted">GPU-hours</span>') == 3  # each row's unit
    assert ">under a minute<" in html and ">0 min<" not in html


def test_reviewer_approves_with_fewer_hours_from_the_detail_page(
    client_for, reviewer, full_request
):
    client = client_for(reviewer)
    detail = client.get(f"/requests/{full_request.pk}/")
    assert "Approve" in detail.content.decode()
    response = client.post(f"/requests/{full_request.pk}/approve/", {"gpu_hours": "250"})
    assert response.status_code == 302
    full_request.refresh_from_db()
    assert full_request.status == "approved" and full_request.allocation.gpu_hours == 250


def test_a_refused_move_is_a_message_not_a_500(client_for, reviewer, full_request):
    client = client_for(reviewer)
    client.post(f"/requests/{full_request.pk}/reject/", {"comment": "No."})
    response = client.post(f"/requests/{full_request.pk}/approve/", follow=True)
    assert response.status_code == 200
    assert "cannot move to approved" in response.content.decode()


def test_allocation_page_shows_grant_use_and_trial_conversion(
    client_for, researcher, project, facility
):
    allocation = AllocationFactory(project=project, facility=facility, kind="trial", gpu_hours=400)
    html = client_for(researcher).get(f"/allocations/{allocation.pk}/").content.decode()
    assert "400 GPU-hours" in html
    assert "purpose=trial_conversion" in html and f"extends={allocation.pk}" in html


def test_dashboard_lists_my_allocations_with_usage_bars(
    client_for, researcher, project, full_request
):
    AllocationFactory(project=project, gpu_hours=100)
    html = client_for(researcher).get("/").content.decode()
    assert "<progress" in html and project.code in html and f"#{full_request.pk}" in html
