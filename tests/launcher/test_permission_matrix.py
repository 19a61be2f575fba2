"""The action matrix over the API: every role x every read and write endpoint of the launcher,
datasets, projects, members and requests, on objects of their own project and of others
(docs/api.md, "Who may do what"; docs/security.md). The page actions and the resume are
test_permission_matrix_pages.py; the roles and fixtures shared by both, matrix_helpers.py.

Roles: `member` (the researcher who launched the work and filed the requests), `pi` (the
project's PI), `colleague` (another plain member of the same project), `other` (PI of another
project), `reviewer` (in no project), `staff` (is_staff, not a reviewer, in no project),
`stranger` (in no project) and `anonymous`. Members act on their project's work; PIs and
managers also edit the project and its members; reviewers see everything and decide on
requests; staff see everything and act on any project's work but decide nothing; everyone else
gets 404 as if the object did not exist. After every refusal everything is exactly as it was;
after every success something changed."""

from __future__ import annotations

import pytest

from tests.launcher.matrix_helpers import (  # noqa: F401 (fixtures)
    GRID,
    NOBODY,
    ROLES,
    _ids,
    by_role,
    people,
    snapshot,
    world,
)

pytestmark = [pytest.mark.django_db]


def call(api, people, role, method, url, body=None):
    client = api.as_user(people[role])
    return (
        getattr(client, method)(url, body, format="json")
        if body is not None
        else getattr(client, method)(url)
    )


# (action, method, url template, body, expected status per role)
READS = [
    ("list jobs", "get", "/api/v1/jobs/", None),
    ("read a job", "get", "/api/v1/jobs/{job}/", None),
    ("read a job's log", "get", "/api/v1/jobs/{job}/log/", None),
    ("list sweeps", "get", "/api/v1/sweeps/", None),
    ("read a sweep", "get", "/api/v1/sweeps/{sweep}/", None),
    ("list datasets", "get", "/api/v1/datasets/", None),
    ("read a dataset", "get", "/api/v1/datasets/{dataset}/", None),
]
READ_STATUS = by_role(members=200, nobody=404, reviewer=200, staff=200)
LIST_STATUS = by_role(members=200, nobody=200, reviewer=200, staff=200)
WORK = by_role(members=200, nobody=404, reviewer=403, staff=200)
LAUNCH = by_role(members=201, nobody=400, reviewer=403, staff=201)
MANAGE = by_role(pi=200, member=403, colleague=403, nobody=404, reviewer=403, staff=403)
REQUESTER = by_role(member=200, pi=200, colleague=403, nobody=404, reviewer=403, staff=403)
DECIDE = by_role(members=403, nobody=404, reviewer=200, staff=403)

WRITES = [
    ("cancel a job", "post", "/api/v1/jobs/{job}/cancel/", None, WORK),
    ("cancel a sweep", "post", "/api/v1/sweeps/{sweep}/cancel/", None, WORK),
    (
        "run a job again",
        "post",
        "/api/v1/jobs/{job}/rerun/",
        None,
        by_role(members=201, nobody=404, reviewer=403, staff=201),
    ),
    # An allocation one may not see is refused like one that does not exist: 400 on the field.
    (
        "launch a job",
        "post",
        "/api/v1/jobs/",
        {"allocation": "{allocation}", "params": {"dataset": "cxr"}},
        LAUNCH,
    ),
    (
        "launch a sweep",
        "post",
        "/api/v1/jobs/",
        {"allocation": "{allocation}", "workload": "sweep", "grid": GRID},
        LAUNCH,
    ),
    (
        "register a dataset",
        "post",
        "/api/v1/datasets/",
        {
            "project": "{project}",
            "name": "ct2",
            "location": "cxr",
            "modality": "ct",
            "sensitivity": "public",
        },
        LAUNCH,
    ),
    ("edit a dataset", "patch", "/api/v1/datasets/{dataset}/", {"location": "cxr/v2"}, WORK),
    (
        "replace a dataset",
        "put",
        "/api/v1/datasets/{dataset}/",
        {
            "project": "{project}",
            "name": "cxr",
            "location": "cxr/v3",
            "modality": "xray",
            "sensitivity": "public",
        },
        WORK,
    ),
    (
        "delete a dataset",
        "delete",
        "/api/v1/datasets/{dataset}/",
        None,
        by_role(members=204, nobody=404, reviewer=403, staff=204),
    ),
    # Projects and members: the PI (or a manager) manages; a member may leave by themselves.
    (
        "create a project",
        "post",
        "/api/v1/projects/",
        {"code": "NEW-PRJ-77", "title": "t", "research_area": "a"},
        by_role(members=201, nobody=201, reviewer=201, staff=201),
    ),
    ("edit a project", "patch", "/api/v1/projects/{project}/", {"title": "Renamed"}, MANAGE),
    (
        "add a member",
        "post",
        "/api/v1/projects/{project}/members/",
        {"username": "erin", "cluster_username": "0erin"},
        MANAGE,
    ),
    (
        "change a member's role",
        "patch",
        "/api/v1/projects/{project}/members/carol/",
        {"role": "manager"},
        MANAGE,
    ),
    (
        "remove a member",
        "delete",
        "/api/v1/projects/{project}/members/rosalind/",
        None,
        by_role(member=204, pi=204, colleague=403, nobody=404, reviewer=403, staff=403),
    ),
    # Requests: the requester (or the PI) files and moves them; reviewers decide.
    (
        "file a request",
        "post",
        "/api/v1/requests/",
        "{request_body}",
        by_role(members=201, nobody=400, reviewer=400, staff=400),
    ),
    ("edit a draft request", "patch", "/api/v1/requests/{draft}/", {"gpu_hours": 1200}, REQUESTER),
    ("submit a draft request", "post", "/api/v1/requests/{draft}/submit/", None, REQUESTER),
    (
        "withdraw a request",
        "post",
        "/api/v1/requests/{submitted}/withdraw/",
        {"comment": "x"},
        REQUESTER,
    ),
    ("approve a request", "post", "/api/v1/requests/{submitted}/approve/", {}, DECIDE),
    ("reject a request", "post", "/api/v1/requests/{submitted}/reject/", {"comment": "No"}, DECIDE),
    (
        "ask for changes",
        "post",
        "/api/v1/requests/{submitted}/request-changes/",
        {"comment": "More"},
        DECIDE,
    ),
]


def _fill(value, ids):
    if isinstance(value, str) and value.startswith("{") and value.endswith("}"):
        found = ids[value[1:-1]]
        return {**found, "project": ids["project"]} if isinstance(found, dict) else found
    if isinstance(value, dict):
        return {k: _fill(v, ids) for k, v in value.items()}
    return value


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("action, method, url, body", READS, ids=[r[0] for r in READS])
def test_who_may_read(api, people, world, role, action, method, url, body):
    ids = _ids(world)
    is_list = url.endswith("s/")
    response = call(api, people, role, method, url.format(**ids))

    assert response.status_code == (LIST_STATUS if is_list else READ_STATUS)[role], action
    if is_list and role != "anonymous":
        everything = {"list jobs": 2, "list sweeps": 1, "list datasets": 1}[action]  # job + cell
        expected = 0 if role in NOBODY else everything
        assert response.json()["count"] == expected, action  # others' rows are simply absent
    if action == "read a job's log" and role not in (*NOBODY, "anonymous"):
        assert response.json()["log"] == "epoch 1 loss 0.69"


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("action, method, url, body, expected", WRITES, ids=[w[0] for w in WRITES])
def test_who_may_act_and_a_refusal_changes_nothing(
    api, people, world, role, action, method, url, body, expected
):
    ids = _ids(world)
    before = snapshot(world)

    response = call(api, people, role, method, url.format(**ids), _fill(body, ids))

    assert response.status_code == expected[role], (action, role, response.content)
    if expected[role] >= 400:
        assert snapshot(world) == before, f"{action} by {role} changed something"
        if expected[role] == 404:
            # Exactly the answer for an id that does not exist: it never says it does.
            missing = {k: 999_999 for k in ids}
            assert (
                response.json()
                == call(
                    api, people, role, method, url.format(**missing), _fill(body, missing)
                ).json()
            )
    else:
        assert snapshot(world) != before, f"{action} by {role} did nothing"
