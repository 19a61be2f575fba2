"""The action matrix: every role x every write endpoint and page action, on objects of their
own project and of others (docs/api.md, "Who may do what"; docs/security.md).

Roles: `member` (the researcher who launched the work and filed the requests), `pi` (the
project's PI), `colleague` (another plain member of the same project), `other` (PI of another
project), `reviewer` (in no project), `staff` (is_staff, not a reviewer, in no project),
`stranger` (in no project) and `anonymous`. Members act on their project's work; PIs and
managers also edit the project and its members; reviewers see everything and decide on
requests; staff see everything and act on any project's work but decide nothing; everyone else
gets 404 as if the object did not exist. After every refusal everything is exactly as it was;
after every success something changed."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.core.exceptions import PermissionDenied
from django.forms.models import model_to_dict

from allocations.models import (
    Allocation,
    AllocationRequest,
    Dataset,
    Event,
    Project,
    ProjectMembership,
)
from launcher import services
from launcher.models import Job, Sweep
from launcher.selectors import NotVisible
from tests.allocations.test_api import payload
from tests.factories import FacilityFactory, NodeTypeFactory, RequestFactory, UserFactory

pytestmark = [pytest.mark.django_db]
ROLES = ("member", "pi", "colleague", "other", "reviewer", "staff", "stranger", "anonymous")
MEMBERS = ("member", "pi", "colleague")
NOBODY = ("other", "stranger")
GRID = {"models": ["resnet18"], "lrs": [0.001], "lr_steps": [5], "weight_decays": [0.0]}


@pytest.fixture
def people(project, pi, researcher, outsider, reviewer, other_project):
    staff = UserFactory(username="sam", is_staff=True)  # staff, not a reviewer, in no project
    UserFactory(username="erin")  # someone to add
    colleague = UserFactory(username="carol")
    ProjectMembership.objects.create(project=project, user=colleague, role="member")
    return {
        "member": researcher,
        "pi": pi,
        "colleague": colleague,
        "other": outsider,
        "reviewer": reviewer,
        "staff": staff,
        "stranger": UserFactory(username="dave"),
        "anonymous": None,
    }


def by_role(**groups):
    """{role: status} from groups: members=..., nobody=..., and single roles."""
    table = {}
    for role in ROLES:
        if role in groups:
            table[role] = groups[role]
        elif role in MEMBERS and "members" in groups:
            table[role] = groups["members"]
        elif role in NOBODY and "nobody" in groups:
            table[role] = groups["nobody"]
    table.setdefault("anonymous", 401)
    assert set(table) == set(ROLES), sorted(set(ROLES) - set(table))
    return table


@pytest.fixture
def world(project, researcher, tmp_path):
    """An active allocation of the project with a queued job, a queued two-cell sweep and a
    registered dataset whose folder exists."""
    (tmp_path / project.code / "cxr").mkdir(parents=True)
    facility = FacilityFactory(
        slug="local-matrix", backend="local", backend_settings={"storage_root": str(tmp_path)}
    )
    today = timezone_today()
    allocation = Allocation.objects.create(
        project=project,
        facility=facility,
        gpu_hours=Decimal(100),
        start_date=today,
        end_date=today + dt.timedelta(days=30),
        status="active",
        account_name="matrix-a1",
    )
    dataset = Dataset.objects.create(
        project=project,
        name="cxr",
        location="cxr",
        modality="xray",
        sensitivity="public",
        created_by=researcher,
    )
    job = services.job_launch(
        by=researcher,
        allocation=allocation,
        gpus=1,
        wall_time_minutes=30,
        params={"dataset": "cxr"},
    )
    Job.objects.filter(pk=job.pk).update(log_tail="epoch 1 loss 0.69")
    sweep = services.sweep_launch(
        by=researcher, allocation=allocation, grid=GRID, gpus=1, wall_time_minutes=30, params={}
    )
    NodeTypeFactory(
        facility=FacilityFactory(slug="baskerville", name="Baskerville"), name="B-A100-40"
    )
    draft = RequestFactory(project=project, requested_by=researcher)
    submitted = RequestFactory(project=project, requested_by=researcher, status="submitted")
    return {
        "allocation": allocation,
        "job": job,
        "sweep": sweep,
        "dataset": dataset,
        "draft": draft,
        "submitted": submitted,
    }


def timezone_today():
    from django.utils import timezone

    return timezone.localdate()


def snapshot(world):
    """Everything a refused action must leave untouched."""
    rows = {
        model.__name__: [model_to_dict(o) for o in model.objects.order_by("pk")]
        for model in (Project, ProjectMembership, AllocationRequest, Allocation, Dataset)
    }
    return {
        **rows,
        "jobs": sorted(Job.objects.values_list("pk", "state")),
        "sweeps": sorted(Sweep.objects.values_list("pk", flat=True)),
        "events": Event.objects.count(),
    }


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


def _ids(world):
    return {
        "job": world["job"].pk,
        "sweep": world["sweep"].pk,
        "dataset": world["dataset"].pk,
        "allocation": world["allocation"].pk,
        "project": world["allocation"].project_id,
        "draft": world["draft"].pk,
        "submitted": world["submitted"].pk,
        "request_body": payload(world["allocation"].project),
    }


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


# A facility whose backend can resume (Slurm, configured; nothing here reaches it: the resume
# stops at the ledger check, database only, because the allocation is suspended).
UNREACHED_SLURM = {
    "host": "login.invalid",
    "user": "portal",
    "key_path": "/nonexistent",
    "host_key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA",
    "cluster": "matrix",
}


@pytest.fixture
def preempted(project, researcher):
    facility = FacilityFactory(
        slug="slurm-matrix", backend="slurm", backend_settings=UNREACHED_SLURM
    )
    today = timezone_today()
    allocation = Allocation.objects.create(
        project=project,
        facility=facility,
        gpu_hours=Decimal(100),
        start_date=today,
        end_date=today + dt.timedelta(days=30),
        status="suspended",
        account_name="matrix-s1",
    )
    return Job.objects.create(
        allocation=allocation,
        created_by=researcher,
        gpus=1,
        wall_time_minutes=30,
        token="matrixresume01",
        state="preempted",
        params={},
    )


@pytest.mark.parametrize(
    "role, refusal",
    [
        ("member", None),
        ("pi", None),
        ("colleague", None),
        ("staff", None),
        ("reviewer", PermissionDenied),
        ("other", NotVisible),
        ("stranger", NotVisible),
        ("anonymous", NotVisible),
    ],
)
def test_resume_is_held_to_the_same_rule(people, preempted, role, refusal):
    from django.contrib.auth.models import AnonymousUser

    user = people[role] or AnonymousUser()
    if refusal is None:
        # Allowed: the resume runs and decides (here: not resumed, the allocation is suspended).
        assert services.job_resume(job=preempted, by=user) is True
        preempted.refresh_from_db()
        assert preempted.state == "failed"
        assert preempted.state_reason == "not resumed: the allocation is suspended"
    else:
        with pytest.raises(refusal):
            services.job_resume(job=preempted, by=user)
        assert Job.objects.get(pk=preempted.pk).state == "preempted"


# Page actions: refusals are messages on the page (302) or 404; anonymous goes to the login.
def _effect(world, what):
    job, submitted = world["job"], world["submitted"]
    return {
        "cancel": lambda: Job.objects.get(pk=job.pk).state == "cancelled",
        "approve": lambda: AllocationRequest.objects.get(pk=submitted.pk).status == "approved",
        "withdraw": lambda: AllocationRequest.objects.get(pk=submitted.pk).status == "withdrawn",
        "add": lambda: ProjectMembership.objects.filter(user__username="erin").exists(),
        "retry": lambda: Allocation.objects.get(pk=world["allocation"].pk).status == "provisioning",
    }[what]


PAGE_ACTIONS = [
    (
        "cancel",
        "/jobs/{job}/cancel/",
        {},
        {"members": True, "staff": True, "reviewer": False, "nobody": 404},
    ),
    (
        "approve",
        "/requests/{submitted}/approve/",
        {},
        {"members": False, "staff": False, "reviewer": True, "nobody": 404},
    ),
    (
        "withdraw",
        "/requests/{submitted}/withdraw/",
        {},
        {
            "member": True,
            "pi": True,
            "colleague": False,
            "staff": False,
            "reviewer": False,
            "nobody": 404,
        },
    ),
    (
        "add",
        "/projects/{project}/members/add/",
        {"username": "erin"},
        {
            "pi": True,
            "member": False,
            "colleague": False,
            "staff": False,
            "reviewer": False,
            "nobody": 404,
        },
    ),
    (
        "retry",
        "/staff/allocations/{allocation}/retry/",
        {},
        {"members": False, "staff": True, "reviewer": False, "nobody": 404},
    ),
]


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("what, url, body, outcome", PAGE_ACTIONS, ids=[a[0] for a in PAGE_ACTIONS])
def test_every_page_action_follows_the_same_rule(
    client, people, world, role, what, url, body, outcome
):
    if what == "retry":
        Allocation.objects.filter(pk=world["allocation"].pk).update(status="failed")
    table = by_role(**outcome)
    if people[role] is not None:
        client.force_login(people[role])
    done = _effect(world, what)
    before = snapshot(world)

    response = client.post(url.format(**_ids(world)), body)

    if role == "anonymous":
        assert response.status_code == 302 and "/accounts/login/" in response["Location"]
        assert snapshot(world) == before
    elif table[role] == 404:
        assert response.status_code == 404, (what, role)
        assert snapshot(world) == before
    else:
        assert response.status_code == 302, (what, role, response.status_code)
        assert done() is table[role], (what, role)
        if not table[role]:
            assert snapshot(world) == before, f"{what} by {role} changed something"
