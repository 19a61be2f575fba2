"""A live portal with people, a project, an active allocation and some work in it, for the tests
that talk to the API from outside: the schemathesis run and the generated client.

Use the `seeded_portal` fixture (import it into the test module). The portal is pytest-django's
`live_server` (a real HTTP server in a thread, on the test database); tasks the API enqueues go
to a private Redis queue no worker listens on (so a fuzzer's thousand launches run nothing on
this 2-core machine), unless the test asks for `eager=True` (then they run in-process, as in the
rest of the suite).
"""

from __future__ import annotations

import datetime as dt
import os
import uuid
from dataclasses import dataclass, field
from decimal import Decimal

import pytest
from django.conf import settings
from django.contrib.auth.models import Group
from django.utils import timezone

from allocations.models import Allocation, ProjectMembership
from benchmarks import demo as benchmarks_demo
from launcher import services as launcher_services
from portal.tokens.services import account_token_create
from tests.factories import (
    FacilityFactory,
    NodeTypeFactory,
    ProjectFactory,
    RequestFactory,
    UserFactory,
)


@dataclass
class SeededPortal:
    url: str
    token: str  # the PI's
    member_token: str
    project_id: int
    allocation_id: int
    facility: str
    #: A token per role the fuzzer plays: "pi", "researcher" (a member), "reviewer", "staff"
    #: (is_staff, not a reviewer) and "anonymous" (None: no credentials).
    tokens: dict[str, str | None] = field(default_factory=dict)


def seed() -> SeededPortal:
    """What a fuzzer needs to reach past the 404s: a PI, a member, a reviewer and a staff user
    with tokens, a project on a local facility that auto-approves trials, an active allocation,
    a job, a sweep, requests."""
    today = timezone.localdate()
    benchmarks_demo.seed()  # workloads and results, so recommendations have something to rank
    facility = FacilityFactory(
        slug="local-lab",
        name="Local lab",
        kind="local",
        backend="local",
        trial_gpu_hours_cap=400,
        trial_auto_approve=True,
        gpu_hour_rate=Decimal("0.50"),
    )
    NodeTypeFactory(facility=facility, name="local-cpu", accelerator="CPU")
    pi = UserFactory(username="paula", first_name="Paula")
    member = UserFactory(username="rosalind", first_name="Rosalind")
    project = ProjectFactory(code="ABC-DEF-001", pi=pi)
    ProjectMembership.objects.create(project=project, user=member, role="member")
    allocation = Allocation.objects.create(
        project=project,
        facility=facility,
        gpu_hours=Decimal(500),
        start_date=today,
        end_date=today + dt.timedelta(days=60),
        status="active",
        account_name="abc-def-001-a1",
    )
    RequestFactory(project=project, facility=facility, requested_by=pi)
    RequestFactory(
        project=project,
        facility=facility,
        requested_by=member,
        status="submitted",
        submitted_at=timezone.now(),
    )
    launcher_services.job_launch(
        by=member,
        allocation=allocation,
        gpus=1,
        wall_time_minutes=30,
        params={"model": "resnet18", "epochs": 1},
    )
    launcher_services.sweep_launch(
        by=pi,
        allocation=allocation,
        gpus=1,
        wall_time_minutes=10,
        params={},
        concurrency=2,
        grid={
            "models": ["resnet18"],
            "lrs": [1e-3],
            "lr_steps": [10],
            "weight_decays": [0.0],
            "folds": 2,
        },
    )
    reviewer = UserFactory(username="grace", first_name="Grace")
    reviewer.groups.add(Group.objects.get_or_create(name=settings.PORTAL_REVIEWERS_GROUP)[0])
    staff = UserFactory(username="sam", first_name="Sam", is_staff=True)
    tokens = {
        "pi": account_token_create(user=pi)[1],
        "researcher": account_token_create(user=member)[1],
        "reviewer": account_token_create(user=reviewer)[1],
        "staff": account_token_create(user=staff)[1],
        "anonymous": None,
    }
    return SeededPortal(
        url="",
        token=tokens["pi"],
        member_token=tokens["researcher"],
        project_id=project.pk,
        allocation_id=allocation.pk,
        facility=facility.slug,
        tokens=tokens,
    )


def _drop_queue(app, name: str) -> None:
    with app.connection_for_write() as connection:
        connection.default_channel.queue_delete(name)


@pytest.fixture
def seeded_portal(live_server, request):
    """The live portal, seeded. `@pytest.mark.parametrize("seeded_portal", [{"eager": True}],
    indirect=True)` runs enqueued tasks in-process (the trial's provisioning, a job's submit)."""
    from portal.celery import app

    eager = bool(getattr(request, "param", {}).get("eager", False))
    queue = f"contract-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    old = (app.conf.task_always_eager, app.conf.task_default_queue)
    app.conf.task_always_eager, app.conf.task_default_queue = eager, queue
    try:
        portal = seed()
        portal.url = live_server.url
        yield portal
    finally:
        app.conf.task_always_eager, app.conf.task_default_queue = old
        if not eager:
            _drop_queue(app, queue)
