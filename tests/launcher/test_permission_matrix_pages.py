"""The action matrix beyond the API (docs/api.md, "Who may do what"; docs/security.md): the
same roles (matrix_helpers.py) held to the same rule by the page actions (cancel a job, approve
and withdraw a request, add a member, retry an allocation) and by the resume of a preempted job
(`services.job_resume`). On the pages a refusal is a message (302) or 404 and anonymous goes to
the login; after every refusal everything is exactly as it was. The API: test_permission_matrix.py.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.core.exceptions import PermissionDenied

from allocations.models import Allocation, AllocationRequest, ProjectMembership
from launcher import services
from launcher.models import Job
from launcher.selectors import NotVisible
from tests.factories import FacilityFactory
from tests.launcher.matrix_helpers import (  # noqa: F401 (fixtures)
    ROLES,
    _ids,
    by_role,
    people,
    snapshot,
    timezone_today,
    world,
)

pytestmark = [pytest.mark.django_db]


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
