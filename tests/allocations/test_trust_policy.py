"""Policy that holds under attack (issue 21): one cluster-login rule everywhere, trials that
cannot be farmed with many projects, project creation rate-limited, no reviewer deciding on a
project they belong to, and one definition of staff and reviewer for every app."""

from __future__ import annotations

import html
import re

import pytest
from django.core.exceptions import PermissionDenied

from allocations import services
from allocations.models import Allocation, AllocationRequest, Event, ProjectMembership
from allocations.selectors import timeline
from launcher.backends.contract import BackendError, check_cluster_username
from tests.allocations.test_api import payload
from tests.factories import AllocationFactory, ProjectFactory, RequestFactory, UserFactory

pytestmark = pytest.mark.django_db


# One cluster-username rule ------------------------------------------------------------------
@pytest.mark.parametrize(
    "login, ok",
    [
        ("0x", True),
        ("r.franklin", True),
        ("a", True),
        ("x" * 32, True),
        ("_x", False),
        ("-x", False),
        ("Rosalind", False),
        ("a,b", False),
        ("a=b", False),
        ("x" * 33, False),
        ("", False),
    ],
)
def test_one_cluster_login_rule_for_the_service_the_api_and_the_backends(
    api, client, pi, project, login, ok
):
    newcomer = UserFactory(username=f"new{len(login)}{ok}")
    # The project page's form field (the browser checks the same rule before posting)
    client.force_login(pi)
    pattern = re.search(
        r'name="cluster_username"[^>]*pattern="([^"]+)"',
        client.get(f"/projects/{project.pk}/").content.decode(),
    ).group(1)
    if login:  # blank is "none" to the portal, and the field is optional
        assert (re.fullmatch(html.unescape(pattern), login) is not None) is ok
    # The backends' check
    if ok:
        assert check_cluster_username(login) == login
    else:
        with pytest.raises(BackendError) as refused:
            check_cluster_username(login)
        assert refused.value.permanent is True
    # The API (serializer and service)
    if not login:
        return  # blank means "none" to the portal (no Slurm association)
    response = api.as_user(pi).post(
        f"/api/v1/projects/{project.pk}/members/",
        {"username": newcomer.username, "cluster_username": login},
    )
    assert response.status_code == (200 if ok else 400), response.json()
    if not ok:
        assert "cluster_username" in response.json()
    # The service on its own
    other = UserFactory(username=f"svc{len(login)}{ok}")
    if ok:
        member = services.project_member_add(
            project=project, by=pi, user=other, cluster_username=login
        )
        assert member.cluster_username == login
    else:
        with pytest.raises(services.PolicyError):
            services.project_member_add(project=project, by=pi, user=other, cluster_username=login)
        assert not ProjectMembership.objects.filter(user=other).exists()


def test_a_member_left_out_of_an_account_is_on_the_staff_home_until_fixed(
    client, project, researcher, admin
):
    member = ProjectMembership.objects.get(project=project, user=researcher)
    services.project_members_sync_record(
        project_id=project.pk, refused={member.pk: "invalid cluster username '_x'"}
    )
    services.project_members_sync_record(
        project_id=project.pk, refused={member.pk: "invalid cluster username '_x'"}
    )
    client.force_login(admin)
    page = client.get("/staff/").content.decode()
    assert "invalid cluster username &#x27;_x&#x27;" in page and "rosalind" in page
    assert [e.to_state for e in timeline(project)].count("member_sync_failed") == 1  # once

    services.project_members_sync_record(project_id=project.pk, refused={})
    assert "invalid cluster username" not in client.get("/staff/").content.decode()


# Trials that cannot be farmed ------------------------------------------------------------------
def _trial(api, user, project):
    return api.as_user(user).post(
        "/api/v1/requests/",
        payload(project, kind="trial", gpu_hours=400, justification="Trying it out.", submit=True),
    )


def test_one_person_cannot_farm_auto_approved_trials_with_many_projects(api, pi, node_type):
    projects = [ProjectFactory(code=f"FARM-{i:03d}", pi=pi) for i in range(3)]
    first = _trial(api, pi, projects[0])
    assert first.json()["status"] == "approved"

    second = _trial(api, pi, projects[1])
    assert second.status_code == 201
    assert second.json()["status"] == "submitted"  # held for reviewers, not refused
    held = AllocationRequest.objects.get(pk=second.json()["id"])
    reason = timeline(held).last()
    assert reason.to_state == "held_for_review" and reason.actor is None
    assert "already has 1 open trial(s) on Baskerville" in reason.comment
    assert held.allocation is None


def test_trials_per_person_per_period_count_closed_trials_too(api, pi, facility, node_type):
    facility.trial_open_per_person = 5
    facility.trial_per_person_per_period = 2
    facility.save()
    projects = [ProjectFactory(code=f"PER-{i:03d}", pi=pi) for i in range(3)]
    for project in projects[:2]:
        approved = _trial(api, pi, project)
        assert approved.json()["status"] == "approved"
        Allocation.objects.filter(project=project).update(status="closed")
    third = _trial(api, pi, projects[2])
    assert third.json()["status"] == "submitted"
    comment = timeline(AllocationRequest.objects.get(pk=third.json()["id"])).last().comment
    assert "had 2 trial(s) on Baskerville in the last 365 days" in comment


def test_a_member_filing_a_trial_counts_against_the_pi_too(api, pi, researcher, project, node_type):
    other = ProjectFactory(code="PI-OTHER-01", pi=pi)
    assert _trial(api, pi, other).json()["status"] == "approved"
    # The researcher has no trial of their own, but the project's PI has one open.
    held = _trial(api, researcher, project)
    assert held.json()["status"] == "submitted"
    assert (
        "the project's PI already has 1 open trial"
        in timeline(AllocationRequest.objects.get(pk=held.json()["id"])).last().comment
    )


def test_project_creation_is_rate_limited_per_user(api, researcher, admin, settings):
    settings.PORTAL_PROJECTS_PER_USER_PER_DAY = 2
    client = api.as_user(researcher)
    codes = ["RATE-001", "RATE-002", "RATE-003"]
    answers = [
        client.post("/api/v1/projects/", {"code": c, "title": "t", "research_area": "a"})
        for c in codes
    ]
    assert [a.status_code for a in answers] == [201, 201, 400]
    assert "at most 2 projects in 24 hours" in str(answers[2].json())
    assert (
        not services.user_find(identifier="rosalind").led_projects.filter(code="RATE-003").exists()
    )
    # Staff are not limited.
    staff = api.as_user(admin)
    for code in ("STAFF-001", "STAFF-002", "STAFF-003"):
        assert (
            staff.post(
                "/api/v1/projects/", {"code": code, "title": "t", "research_area": "a"}
            ).status_code
            == 201
        )


# Conflict of interest --------------------------------------------------------------------------
@pytest.mark.parametrize("role", ["pi", "member"])
@pytest.mark.parametrize(
    "action, body",
    [("approve", {}), ("reject", {"comment": "No"}), ("request-changes", {"comment": "More"})],
)
def test_a_reviewer_never_decides_a_request_of_their_own_project(
    api, client, project, researcher, reviewer, role, action, body
):
    ProjectMembership.objects.create(project=project, user=reviewer, role=role)
    req = RequestFactory(project=project, requested_by=researcher, status="submitted")
    events = Event.objects.count()

    response = api.as_user(reviewer).post(f"/api/v1/requests/{req.pk}/{action}/", body)

    assert response.status_code == 403
    assert "conflict of interest" in response.json()["detail"]
    req.refresh_from_db()
    assert req.status == "submitted" and req.reviewed_by is None
    assert Event.objects.count() == events
    # The page offers no buttons and says why.
    client.force_login(reviewer)
    page = client.get(f"/requests/{req.pk}/").content.decode()
    assert "conflict of interest" in page
    assert f"/requests/{req.pk}/approve/" not in page
    # The service refuses on its own, superusers included.
    with pytest.raises(PermissionDenied):
        services.request_approve(request=req, by=reviewer)


def test_a_superuser_who_belongs_to_the_project_does_not_decide_either(project, researcher, admin):
    ProjectMembership.objects.create(project=project, user=admin, role="member")
    req = RequestFactory(project=project, requested_by=researcher, status="submitted")
    with pytest.raises(PermissionDenied):
        services.request_reject(request=req, by=admin, comment="No")


def test_an_unrelated_reviewer_still_decides(api, project, researcher, reviewer):
    req = RequestFactory(project=project, requested_by=researcher, status="submitted")
    response = api.as_user(reviewer).post(f"/api/v1/requests/{req.pk}/approve/", {})
    assert response.status_code == 200 and response.json()["status"] == "approved"


# One definition of staff ---------------------------------------------------------------------
def test_staff_who_are_not_reviewers_see_what_they_may_act_on(api, client, project, researcher):
    staff = UserFactory(username="sam", is_staff=True)
    allocation = AllocationFactory(project=project)
    req = RequestFactory(project=project, requested_by=researcher, status="submitted")
    client_api = api.as_user(staff)
    for url in (
        f"/api/v1/allocations/{allocation.pk}/",
        f"/api/v1/projects/{project.pk}/",
        f"/api/v1/requests/{req.pk}/",
    ):
        assert client_api.get(url).status_code == 200, url
    assert client_api.get("/api/v1/allocations/").json()["count"] == 1
    # ...but they do not decide on requests (reviewers do).
    assert client_api.post(f"/api/v1/requests/{req.pk}/approve/", {}).status_code == 403
    client.force_login(staff)
    assert client.get("/staff/").status_code == 200
    assert client.get(f"/allocations/{allocation.pk}/").status_code == 200
    assert client.get("/reports/usage/").status_code == 200
