"""What the action-matrix tests share (test_permission_matrix.py, the API;
test_permission_matrix_pages.py, the page actions and the resume): the roles, `people` (one
user per role), `world` (the project's allocation, job, sweep, dataset and requests), `by_role`
(a status per role from groups), `snapshot` (what a refusal must leave untouched) and `_ids`
(the ids a URL template is filled with). `people` and `world` are fixtures: import them by name
into the test module that takes them."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
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
from tests.allocations.test_api import payload
from tests.factories import FacilityFactory, NodeTypeFactory, RequestFactory, UserFactory

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
