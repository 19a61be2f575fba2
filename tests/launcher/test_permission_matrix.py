"""Nobody where they don't belong: every launcher and dataset endpoint, every action, for a
member of the project, a member of another project, a reviewer, staff and an anonymous
caller. Members act on their project's work; reviewers and staff see; only staff act on
others' work; everyone else gets 404 as if the object did not exist (docs/api.md). After
every refusal the object is exactly as it was."""
from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.core.exceptions import PermissionDenied
from django.forms.models import model_to_dict

from allocations.models import Allocation, Dataset, Event
from launcher import services
from launcher.access import NotVisible
from launcher.models import Job, Sweep
from tests.factories import FacilityFactory, UserFactory

pytestmark = [pytest.mark.django_db]
ROLES = ("member", "other", "reviewer", "staff", "anonymous")
GRID = {"models": ["resnet18"], "lrs": [0.001], "lr_steps": [5], "weight_decays": [0.0]}


@pytest.fixture
def people(researcher, outsider, reviewer, other_project):
    staff = UserFactory(username="sam", is_staff=True)  # staff, not a reviewer, in no project
    return {"member": researcher, "other": outsider, "reviewer": reviewer, "staff": staff,
            "anonymous": None}


@pytest.fixture
def world(project, researcher, tmp_path):
    """An active allocation of the project with a queued job, a queued two-cell sweep and a
    registered dataset whose folder exists."""
    (tmp_path / project.code / "cxr").mkdir(parents=True)
    facility = FacilityFactory(slug="local-matrix", backend="local",
                               backend_settings={"storage_root": str(tmp_path)})
    today = timezone_today()
    allocation = Allocation.objects.create(
        project=project, facility=facility, gpu_hours=Decimal(100), start_date=today,
        end_date=today + dt.timedelta(days=30), status="active", account_name="matrix-a1")
    dataset = Dataset.objects.create(project=project, name="cxr", location="cxr",
                                     modality="xray", sensitivity="public", created_by=researcher)
    job = services.job_launch(by=researcher, allocation=allocation, gpus=1,
                              wall_time_minutes=30, params={"dataset": "cxr"})
    Job.objects.filter(pk=job.pk).update(log_tail="epoch 1 loss 0.69")
    sweep = services.sweep_launch(by=researcher, allocation=allocation, grid=GRID, gpus=1,
                                  wall_time_minutes=30, params={})
    return {"allocation": allocation, "job": job, "sweep": sweep, "dataset": dataset}


def timezone_today():
    from django.utils import timezone

    return timezone.localdate()


def snapshot(world):
    """Everything a refused action must leave untouched."""
    return {"jobs": sorted(Job.objects.values_list("pk", "state")),
            "sweeps": sorted(Sweep.objects.values_list("pk", flat=True)),
            "datasets": [model_to_dict(d) for d in Dataset.objects.order_by("pk")],
            "events": Event.objects.count()}


def call(api, people, role, method, url, body=None):
    client = api.as_user(people[role])
    return getattr(client, method)(url, body, format="json") if body is not None else \
        getattr(client, method)(url)


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
READ_STATUS = {"member": 200, "other": 404, "reviewer": 200, "staff": 200, "anonymous": 401}
LIST_STATUS = {"member": 200, "other": 200, "reviewer": 200, "staff": 200, "anonymous": 401}

WRITES = [
    ("cancel a job", "post", "/api/v1/jobs/{job}/cancel/", None,
     {"member": 200, "other": 404, "reviewer": 403, "staff": 200, "anonymous": 401}),
    ("cancel a sweep", "post", "/api/v1/sweeps/{sweep}/cancel/", None,
     {"member": 200, "other": 404, "reviewer": 403, "staff": 200, "anonymous": 401}),
    # An allocation one may not see is refused like one that does not exist: 400 on the field.
    ("launch a job", "post", "/api/v1/jobs/",
     {"allocation": "{allocation}", "params": {"dataset": "cxr"}},
     {"member": 201, "other": 400, "reviewer": 403, "staff": 201, "anonymous": 401}),
    ("launch a sweep", "post", "/api/v1/jobs/",
     {"allocation": "{allocation}", "workload": "sweep", "grid": GRID},
     {"member": 201, "other": 400, "reviewer": 403, "staff": 201, "anonymous": 401}),
    ("register a dataset", "post", "/api/v1/datasets/",
     {"project": "{project}", "name": "ct2", "location": "cxr", "modality": "ct",
      "sensitivity": "public"},
     {"member": 201, "other": 400, "reviewer": 403, "staff": 201, "anonymous": 401}),
    ("edit a dataset", "patch", "/api/v1/datasets/{dataset}/", {"location": "cxr/v2"},
     {"member": 200, "other": 404, "reviewer": 403, "staff": 200, "anonymous": 401}),
    ("replace a dataset", "put", "/api/v1/datasets/{dataset}/",
     {"project": "{project}", "name": "cxr", "location": "cxr/v3", "modality": "xray",
      "sensitivity": "public"},
     {"member": 200, "other": 404, "reviewer": 403, "staff": 200, "anonymous": 401}),
    ("delete a dataset", "delete", "/api/v1/datasets/{dataset}/", None,
     {"member": 204, "other": 404, "reviewer": 403, "staff": 204, "anonymous": 401}),
]


def _ids(world):
    return {"job": world["job"].pk, "sweep": world["sweep"].pk,
            "dataset": world["dataset"].pk, "allocation": world["allocation"].pk,
            "project": world["allocation"].project_id}


def _fill(value, ids):
    if isinstance(value, str) and value.startswith("{") and value.endswith("}"):
        return ids[value[1:-1]]
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
        expected = 0 if role == "other" else everything
        assert response.json()["count"] == expected, action  # others' rows are simply absent
    if action == "read a job's log" and role != "other" and role != "anonymous":
        assert response.json()["log"] == "epoch 1 loss 0.69"


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("action, method, url, body, expected", WRITES,
                         ids=[w[0] for w in WRITES])
def test_who_may_act_and_a_refusal_changes_nothing(api, people, world, role, action, method,
                                                   url, body, expected):
    ids = _ids(world)
    before = snapshot(world)

    response = call(api, people, role, method, url.format(**ids), _fill(body, ids))

    assert response.status_code == expected[role], (action, role, response.content)
    if expected[role] >= 400:
        assert snapshot(world) == before, f"{action} by {role} changed something"
        if expected[role] == 404:
            # Exactly the answer for an id that does not exist: it never says it does.
            missing = {k: 999_999 for k in ids}
            assert response.json() == call(api, people, role, method, url.format(**missing),
                                           _fill(body, missing)).json()
    else:
        assert snapshot(world) != before, f"{action} by {role} did nothing"


@pytest.mark.parametrize("role, refusal", [
    ("member", None), ("staff", None), ("reviewer", PermissionDenied), ("other", NotVisible),
    ("anonymous", NotVisible)])
def test_resume_is_held_to_the_same_rule(people, world, role, refusal):
    from django.contrib.auth.models import AnonymousUser

    job = world["job"]
    Job.objects.filter(pk=job.pk).update(state="preempted")
    job.refresh_from_db()
    user = people[role] or AnonymousUser()
    if refusal is None:
        services.job_resume(job=job, by=user)  # allowed (the local backend has no resume)
    else:
        with pytest.raises(refusal):
            services.job_resume(job=job, by=user)
    assert Job.objects.get(pk=job.pk).state == "preempted"


@pytest.mark.parametrize("role, status", [("member", 302), ("staff", 302), ("reviewer", 302),
                                          ("other", 404)])
def test_the_job_page_cancel_follows_the_same_rule(client, people, world, role, status):
    client.force_login(people[role])
    response = client.post(f"/jobs/{world['job'].pk}/cancel/")

    assert response.status_code == status
    cancelled = Job.objects.get(pk=world["job"].pk).state == "cancelled"
    assert cancelled is (role in ("member", "staff"))
