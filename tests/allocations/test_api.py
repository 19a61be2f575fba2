"""The REST API: shapes, per-field 400s that save nothing, 409s, 404s for others' objects."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from allocations.models import Allocation, AllocationRequest, Event
from tests.factories import JUSTIFICATION, AllocationFactory, charge

pytestmark = pytest.mark.django_db


def payload(project_obj, **overrides):
    today = timezone.localdate()
    body = {
        "project": project_obj.pk,
        "facility": "baskerville",
        "node_type": "B-A100-40",
        "kind": "full",
        "purpose": "new",
        "gpu_hours": 1000,
        "cpu_hours": 0,
        "start_date": today.isoformat(),
        "end_date": (today + dt.timedelta(days=60)).isoformat(),
        "data_sensitivity": "public",
        "justification": JUSTIFICATION,
    }
    body.update(overrides)
    return body


def test_token_auth_round_trip(api, researcher):
    response = api.post("/api/v1/auth/token/", {"username": "rosalind", "password": "pw-for-tests"})
    assert response.status_code == 200
    api.credentials(HTTP_AUTHORIZATION=f"Token {response.json()['token']}")
    assert api.get("/api/v1/projects/").status_code == 200


def test_wrong_password_is_a_400_with_a_message(api, researcher):
    response = api.post("/api/v1/auth/token/", {"username": "rosalind", "password": "nope"})
    assert response.status_code == 400
    assert response.json()["non_field_errors"]


def test_facilities_list_their_slug_policy_and_node_types(api, researcher, node_type):
    body = api.as_user(researcher).get("/api/v1/facilities/").json()
    baskerville = next(f for f in body["results"] if f["slug"] == "baskerville")
    assert baskerville["trial_gpu_hours_cap"] == 400
    assert [n["name"] for n in baskerville["node_types"]] == ["B-A100-40"]
    assert api.get("/api/v1/facilities/baskerville/").json()["name"] == "Baskerville"


def test_create_submit_and_approve_a_full_request(api, researcher, reviewer, project, node_type):
    created = api.as_user(researcher).post("/api/v1/requests/", payload(project))
    assert created.status_code == 201, created.json()
    body = created.json()
    assert body["status"] == "draft" and body["facility"] == "baskerville"
    assert body["node_type"] == "B-A100-40" and body["allocation"] is None

    submitted = api.post(f"/api/v1/requests/{body['id']}/submit/")
    assert submitted.json()["status"] == "submitted"

    approved = api.as_user(reviewer).post(
        f"/api/v1/requests/{body['id']}/approve/", {"gpu_hours": 800, "comment": "Start smaller."}
    )
    assert approved.status_code == 200
    assert approved.json()["status"] == "approved"
    allocation_id = approved.json()["allocation"]
    allocation = api.get(f"/api/v1/allocations/{allocation_id}/").json()
    assert allocation["gpu_hours"] == 800 and isinstance(allocation["gpu_hours"], float)
    assert allocation["gpu_hours_used"] == 0 and allocation["gpu_hours_remaining"] == 800


def test_a_trial_can_be_created_and_submitted_in_one_call(api, researcher, project, node_type):
    response = api.as_user(researcher).post(
        "/api/v1/requests/",
        payload(project, kind="trial", gpu_hours=400, justification="Trying it out.", submit=True),
    )
    assert response.status_code == 201, response.json()
    assert response.json()["status"] == "approved"


def test_a_trial_over_the_cap_is_a_400_on_gpu_hours(api, researcher, project, node_type):
    response = api.as_user(researcher).post(
        "/api/v1/requests/",
        payload(project, kind="trial", gpu_hours=401, justification="Trying it out."),
    )
    assert response.status_code == 400
    assert "capped at 400" in response.json()["gpu_hours"][0]
    assert not AllocationRequest.objects.exists()


BAD_FIELDS = [
    ("gpu_hours", "lots"),
    ("gpu_hours", -5),
    ("gpu_hours", 1.5),
    ("gpu_hours", None),
    ("cpu_hours", "x"),
    ("start_date", "2025-13-45"),
    ("end_date", "yesterday"),
    ("kind", "huge"),
    ("purpose", "fun"),
    ("data_sensitivity", "secret"),
    ("facility", "no-such-place"),
    ("project", 999999),
    ("project", "abc"),
    ("node_type", "H200-9000"),
    ("justification", ""),
    ("cloud_budget", "-3"),
    ("extends", 424242),
    ("start_date", "2001-01-01"),
]


@pytest.mark.parametrize("field,value", BAD_FIELDS)
def test_bad_input_of_every_field_is_a_400_on_that_field_and_saves_nothing(
    api, researcher, project, node_type, field, value
):
    events = Event.objects.count()
    response = api.as_user(researcher).post(
        "/api/v1/requests/", payload(project, **{field: value}), format="json"
    )
    assert response.status_code == 400, response.content
    assert field in response.json(), response.json()
    assert AllocationRequest.objects.count() == 0
    assert Event.objects.count() == events


def test_missing_fields_are_each_reported(api, researcher):
    response = api.as_user(researcher).post("/api/v1/requests/", {}, format="json")
    assert response.status_code == 400
    assert {"project", "facility", "gpu_hours", "start_date", "end_date", "justification"} <= set(
        response.json()
    )


def test_malformed_json_is_a_400_not_a_500(api, researcher):
    response = api.as_user(researcher).generic(
        "POST", "/api/v1/requests/", "{not json", content_type="application/json"
    )
    assert response.status_code == 400


@pytest.mark.parametrize(
    "action,body",
    [
        ("submit", {}),
        ("withdraw", {}),
        ("approve", {}),
        ("reject", {"comment": "No"}),
        ("request-changes", {"comment": "More detail"}),
    ],
)
def test_a_disallowed_move_is_a_409(api, researcher, reviewer, project, facility, action, body):
    from tests.factories import RequestFactory

    req = RequestFactory(
        project=project, facility=facility, requested_by=researcher, status="rejected"
    )
    who = reviewer if action in {"approve", "reject", "request-changes"} else researcher
    response = api.as_user(who).post(f"/api/v1/requests/{req.pk}/{action}/", body)
    assert response.status_code == 409
    assert "rejected" in response.json()["detail"]
    req.refresh_from_db()
    assert req.status == "rejected"


def test_reject_without_a_comment_is_a_400_on_comment(api, reviewer, full_request):
    response = api.as_user(reviewer).post(f"/api/v1/requests/{full_request.pk}/reject/", {})
    assert response.status_code == 400
    assert "comment" in response.json()


def test_update_while_draft_and_409_after_submission(api, researcher, draft_request):
    url = f"/api/v1/requests/{draft_request.pk}/"
    response = api.as_user(researcher).patch(url, {"gpu_hours": 1200})
    assert response.status_code == 200 and response.json()["gpu_hours"] == 1200
    api.post(url + "submit/")
    assert api.patch(url, {"gpu_hours": 5}).status_code == 409


def test_others_objects_are_404_never_403(api, outsider, draft_request, project):
    allocation = AllocationFactory(project=project)
    client = api.as_user(outsider)
    for url in (
        f"/api/v1/requests/{draft_request.pk}/",
        f"/api/v1/projects/{project.pk}/",
        f"/api/v1/allocations/{allocation.pk}/",
        f"/api/v1/allocations/{allocation.pk}/usage/",
    ):
        assert client.get(url).status_code == 404, url
    assert client.post(f"/api/v1/requests/{draft_request.pk}/submit/").status_code == 404
    assert client.get("/api/v1/requests/").json()["count"] == 0


def test_a_non_member_cannot_file_a_request_for_a_project(api, outsider, project, node_type):
    response = api.as_user(outsider).post("/api/v1/requests/", payload(project))
    assert response.status_code == 400 and "project" in response.json()


def test_projects_can_be_created_and_members_added_by_the_pi(api, pi, researcher, outsider):
    created = api.as_user(pi).post(
        "/api/v1/projects/", {"code": "NEW-PRJ-01", "title": "Lungs", "research_area": "Health"}
    )
    assert created.status_code == 201, created.json()
    assert created.json()["pi"] == "paula"
    project_id = created.json()["id"]
    added = api.post(
        f"/api/v1/projects/{project_id}/members/",
        {"username": "rosalind", "role": "member", "cluster_username": "rfranklin"},
    )
    assert added.status_code == 200
    assert {m["username"] for m in added.json()["members"]} == {"paula", "rosalind"}
    duplicate = api.post(
        "/api/v1/projects/", {"code": "NEW-PRJ-01", "title": "x", "research_area": "y"}
    )
    assert duplicate.status_code == 400 and "code" in duplicate.json()
    # A plain member cannot add people.
    denied = api.as_user(researcher).post(
        f"/api/v1/projects/{project_id}/members/", {"username": "charlie"}
    )
    assert denied.status_code == 403


def test_allocation_usage_is_a_daily_series(api, researcher, project):

    allocation = AllocationFactory(project=project, gpu_hours=10)
    now = timezone.now()
    for i, seconds in enumerate((3600, 7200)):
        charge(
            allocation=allocation,
            source="local",
            external_id=f"j{i}",
            period_start=now,
            period_end=now,
            gpu_seconds=seconds,
            cost="1.5",
        )
    body = api.as_user(researcher).get(f"/api/v1/allocations/{allocation.pk}/usage/").json()
    assert body["daily"] == [{"date": now.date().isoformat(), "gpu_hours": 3.0, "cost": "3.0000"}]
    detail = api.get(f"/api/v1/allocations/{allocation.pk}/").json()
    assert (detail["gpu_hours_used"], detail["gpu_hours_remaining"]) == (3.0, 7.0)
    assert Allocation.objects.count() == 1


def test_schema_and_docs_are_served_with_local_assets(api, researcher):
    client = api.as_user(researcher)
    schema = client.get("/api/v1/schema/")
    assert schema.status_code == 200
    assert b"/api/v1/requests/{id}/approve/" in schema.content
    docs = client.get("/api/v1/docs/")
    assert docs.status_code == 200
    html = docs.content.decode()
    assert "swagger-ui" in html and "cdn" not in html.lower()


def test_a_token_can_be_had_while_logged_in_to_the_site(researcher):
    from rest_framework.test import APIClient

    client = APIClient(enforce_csrf_checks=True)
    client.force_login(researcher)
    response = client.post(
        "/api/v1/auth/token/", {"username": "rosalind", "password": "pw-for-tests"}
    )
    assert response.status_code == 200 and response.json()["token"]
