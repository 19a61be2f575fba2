"""Who may see and do what, over every endpoint and page of the core.

People: the researcher (member), the PI, an outsider (member of another project), a reviewer,
and an anonymous visitor. Objects of a project one cannot see are 404, never 403.
"""

from __future__ import annotations

import pytest
from django.test import Client

from tests.factories import AllocationFactory

pytestmark = pytest.mark.django_db
PEOPLE = ["researcher", "pi", "outsider", "reviewer", "anonymous"]


@pytest.fixture
def world(request, project, full_request, draft_request, researcher):
    allocation = AllocationFactory(project=project, facility=full_request.facility)
    return {"submitted": full_request, "draft": draft_request, "allocation": allocation}


def _user(request, who):
    return None if who == "anonymous" else request.getfixturevalue(who)


# (method, url template, {person: expected status})
API_READS = [
    (
        "/api/v1/facilities/",
        dict(researcher=200, pi=200, outsider=200, reviewer=200, anonymous=401),
    ),
    ("/api/v1/projects/", dict(researcher=200, pi=200, outsider=200, reviewer=200, anonymous=401)),
    (
        "/api/v1/projects/{project}/",
        dict(researcher=200, pi=200, outsider=404, reviewer=200, anonymous=401),
    ),
    ("/api/v1/requests/", dict(researcher=200, pi=200, outsider=200, reviewer=200, anonymous=401)),
    (
        "/api/v1/requests/{submitted}/",
        dict(researcher=200, pi=200, outsider=404, reviewer=200, anonymous=401),
    ),
    (
        "/api/v1/allocations/",
        dict(researcher=200, pi=200, outsider=200, reviewer=200, anonymous=401),
    ),
    (
        "/api/v1/allocations/{allocation}/",
        dict(researcher=200, pi=200, outsider=404, reviewer=200, anonymous=401),
    ),
    (
        "/api/v1/allocations/{allocation}/usage/",
        dict(researcher=200, pi=200, outsider=404, reviewer=200, anonymous=401),
    ),
    # The schema and its docs are public: they describe the API, not anyone's data.
    ("/api/v1/schema/", dict(researcher=200, pi=200, outsider=200, reviewer=200, anonymous=200)),
]


def _fill(url, world, project):
    return url.format(
        project=project.pk,
        submitted=world["submitted"].pk,
        draft=world["draft"].pk,
        allocation=world["allocation"].pk,
    )


@pytest.mark.parametrize("who", PEOPLE)
@pytest.mark.parametrize("url,expected", API_READS)
def test_api_reads(request, api, world, project, who, url, expected):
    api.as_user(_user(request, who))
    assert api.get(_fill(url, world, project)).status_code == expected[who]


# Workflow moves on the submitted request (the researcher filed it).
API_MOVES = [
    ("approve", {}, dict(researcher=403, pi=403, outsider=404, reviewer=200, anonymous=401)),
    (
        "reject",
        {"comment": "No"},
        dict(researcher=403, pi=403, outsider=404, reviewer=200, anonymous=401),
    ),
    (
        "request-changes",
        {"comment": "More"},
        dict(researcher=403, pi=403, outsider=404, reviewer=200, anonymous=401),
    ),
    # The reviewer can see the request but only its requester or the PI may withdraw it.
    ("withdraw", {}, dict(researcher=200, pi=200, outsider=404, reviewer=403, anonymous=401)),
]


@pytest.mark.parametrize("who", PEOPLE)
@pytest.mark.parametrize("action,body,expected", API_MOVES)
def test_api_moves(request, api, world, who, action, body, expected):
    api.as_user(_user(request, who))
    url = f"/api/v1/requests/{world['submitted'].pk}/{action}/"
    assert api.post(url, body).status_code == expected[who]


@pytest.mark.parametrize(
    "who,expected",
    [("researcher", 200), ("pi", 200), ("outsider", 404), ("reviewer", 403), ("anonymous", 401)],
)
def test_api_edit_draft(request, api, world, who, expected):
    api.as_user(_user(request, who))
    response = api.patch(f"/api/v1/requests/{world['draft'].pk}/", {"gpu_hours": 10})
    assert response.status_code == expected


PAGES = [
    ("/", dict(researcher=200, pi=200, outsider=200, reviewer=200, anonymous=302)),
    ("/requests/new/", dict(researcher=200, pi=200, outsider=200, reviewer=200, anonymous=302)),
    (
        "/requests/{submitted}/",
        dict(researcher=200, pi=200, outsider=404, reviewer=200, anonymous=302),
    ),
    (
        "/requests/{draft}/edit/",
        dict(researcher=200, pi=200, outsider=404, reviewer=200, anonymous=302),
    ),
    ("/review/", dict(researcher=403, pi=403, outsider=403, reviewer=200, anonymous=302)),
    (
        "/allocations/{allocation}/",
        dict(researcher=200, pi=200, outsider=404, reviewer=200, anonymous=302),
    ),
    ("/api/v1/docs/", dict(researcher=200, pi=200, outsider=200, reviewer=200, anonymous=200)),
]


@pytest.mark.parametrize("who", PEOPLE)
@pytest.mark.parametrize("url,expected", PAGES)
def test_pages(request, world, project, who, url, expected):
    client = Client()
    user = _user(request, who)
    if user:
        client.force_login(user)
    assert client.get(_fill(url, world, project)).status_code == expected[who]


@pytest.mark.parametrize(
    "who,expected", [("researcher", 302), ("outsider", 404), ("anonymous", 302)]
)
def test_page_moves_by_non_reviewers_change_nothing(request, world, who, expected):
    client = Client()
    user = _user(request, who)
    if user:
        client.force_login(user)
    response = client.post(f"/requests/{world['submitted'].pk}/approve/")
    assert response.status_code == expected
    world["submitted"].refresh_from_db()
    assert world["submitted"].status == "submitted"
