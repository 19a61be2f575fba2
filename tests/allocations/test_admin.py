"""Admin actions go through the services, so every move is checked and audited."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.core.exceptions import PermissionDenied
from django.forms.models import model_to_dict
from django.test import Client
from django.utils import timezone

from allocations import services
from allocations.models import (
    Allocation,
    AllocationRequest,
    ProjectMembership,
    UsageMonth,
    UsageRecord,
)
from allocations.rollups import month_of
from allocations.selectors import timeline
from launcher.cloud.models import CloudTask, Cluster
from launcher.models import Job
from tests.factories import AllocationFactory, FacilityFactory, RequestFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_a_manual_facility_waits_for_staff_who_activate_it_from_the_admin(
    project, researcher, reviewer, admin, django_capture_on_commit_callbacks
):
    azure = FacilityFactory(slug="azure", name="Azure", backend="manual", kind="cloud")
    req = RequestFactory(
        project=project, facility=azure, requested_by=researcher, status="submitted"
    )
    with django_capture_on_commit_callbacks(execute=True):
        allocation = services.request_approve(request=req, by=reviewer)
    allocation.refresh_from_db()
    assert allocation.status == "provisioning"

    client = Client()
    client.force_login(admin)
    response = client.post(
        "/admin/allocations/allocation/",
        {"action": "activate", "_selected_action": [allocation.pk]},
    )
    assert response.status_code == 302
    allocation.refresh_from_db()
    assert allocation.status == "active"
    assert timeline(allocation).last().actor == admin


def test_an_admin_action_on_a_disallowed_move_warns_and_changes_nothing(project, facility, admin):
    closed = AllocationFactory(project=project, facility=facility, status="closed")
    client = Client()
    client.force_login(admin)
    response = client.post(
        "/admin/allocations/allocation/",
        {"action": "suspend", "_selected_action": [closed.pk]},
        follow=True,
    )
    assert "cannot move to suspended" in response.content.decode()
    assert Allocation.objects.get(pk=closed.pk).status == "closed"


def test_admin_lists_have_filters(admin):
    client = Client()
    client.force_login(admin)
    for url in (
        "/admin/allocations/allocationrequest/?status__exact=submitted",
        "/admin/allocations/allocation/?status__exact=active",
        "/admin/allocations/facility/",
        "/admin/allocations/event/",
    ):
        assert client.get(url).status_code == 200, url


# The admin is a view on the services (issue 21) -----------------------------------------------
@pytest.fixture
def world(project, researcher, facility):
    allocation = AllocationFactory(
        project=project, facility=facility, status="active", account_name="adm-a1"
    )
    now = timezone.now()
    usage = UsageRecord.objects.create(
        allocation=allocation,
        source="local",
        external_id="j1",
        period_start=now,
        period_end=now,
        gpu_seconds=3600,
        cost=Decimal("1"),
    )
    job = Job.objects.create(
        allocation=allocation,
        created_by=researcher,
        gpus=1,
        token="admintoken01",
        state="running",
        params={},
    )
    cluster = Cluster.objects.create(
        allocation=AllocationFactory(project=project),
        facility=facility,
        region="eu-west-2",
        bucket="b",
        prefix="p/",
    )
    task = CloudTask.objects.create(
        cluster=cluster,
        token="task-token-01",
        instance_type="g4dn.xlarge",
        argv=["train"],
        data_prefix="d/",
    )
    return {
        "allocation": allocation,
        "usage": usage,
        "job": job,
        "cluster": cluster,
        "task": task,
        "request": RequestFactory(project=project, requested_by=researcher),
        "membership": ProjectMembership.objects.get(project=project, user=researcher),
    }


def _rows(world) -> dict:
    return {
        model.__name__: sorted(map(str, (model_to_dict(o) for o in model.objects.order_by("pk"))))
        for model in (
            Allocation,
            AllocationRequest,
            ProjectMembership,
            UsageRecord,
            Job,
            Cluster,
            CloudTask,
        )
    }


@pytest.mark.parametrize(
    "what, url, body",
    [
        (
            "membership inline",
            "/admin/allocations/project/{project}/change/",
            {
                "code": "ABC-DEF-001",
                "memberships-TOTAL_FORMS": "1",
                "memberships-INITIAL_FORMS": "1",
                "memberships-0-id": "{membership}",
                "memberships-0-cluster_username": "_x",
                "memberships-0-role": "pi",
            },
        ),
        (
            "allocation hours",
            "/admin/allocations/allocation/{allocation}/change/",
            {"gpu_hours": "99999", "account_name": "other", "end_date": "2099-01-01"},
        ),
        (
            "allocation delete",
            "/admin/allocations/allocation/{allocation}/delete/",
            {"post": "yes"},
        ),
        ("request add", "/admin/allocations/allocationrequest/add/", {"gpu_hours": "400"}),
        (
            "request edit",
            "/admin/allocations/allocationrequest/{request}/change/",
            {"gpu_hours": "99999", "status": "approved"},
        ),
        (
            "usage edit",
            "/admin/allocations/usagerecord/{usage}/change/",
            {"allocation": "{allocation}", "gpu_seconds": "0", "cost": "0", "reason": "x"},
        ),
        ("usage delete", "/admin/allocations/usagerecord/{usage}/delete/", {"post": "yes"}),
        ("job delete", "/admin/launcher/job/{job}/delete/", {"post": "yes"}),
        ("cluster edit", "/admin/cloud/cluster/{cluster}/change/", {"state": "stopped"}),
        (
            "cloud task argv",
            "/admin/cloud/cloudtask/{task}/change/",
            {"argv": '["rm", "-rf", "/"]'},
        ),
        ("cloud task add", "/admin/cloud/cloudtask/add/", {"argv": '["sh"]'}),
    ],
)
def test_the_admin_writes_nothing_past_the_services(admin, world, project, what, url, body):
    ids = {"project": project.pk, **{k: v.pk for k, v in world.items()}}
    before = _rows(world)
    client = Client()
    client.force_login(admin)

    filled = {k: v.format(**ids) if isinstance(v, str) else v for k, v in body.items()}
    response = client.post(url.format(**ids), filled)

    assert response.status_code == 403, (what, response.status_code)
    assert _rows(world) == before, what


def test_the_admin_still_shows_every_row_read_only(admin, world, project):
    client = Client()
    client.force_login(admin)
    for url in (
        f"/admin/allocations/project/{project.pk}/change/",
        f"/admin/allocations/allocation/{world['allocation'].pk}/change/",
        f"/admin/allocations/usagerecord/{world['usage'].pk}/change/",
        f"/admin/cloud/cloudtask/{world['task'].pk}/change/",
        f"/admin/launcher/job/{world['job'].pk}/change/",
    ):
        response = client.get(url)
        assert response.status_code == 200, url
        assert 'name="_save"' not in response.content.decode(), url


def test_a_usage_correction_is_a_new_audited_record(admin, world):
    allocation = world["allocation"]
    charged = Allocation.objects.get(pk=allocation.pk).gpu_seconds_used
    months = UsageMonth.objects.filter(allocation=allocation, month=month_of(timezone.now()))
    month_before = months.first().gpu_seconds if months.exists() else 0
    client = Client()
    client.force_login(admin)
    response = client.post(
        "/admin/allocations/usagerecord/add/",
        {
            "allocation": allocation.pk,
            "gpu_seconds": "-1800",
            "cost": "-0.5",
            "reason": "Job 7 was charged twice.",
        },
    )

    assert response.status_code == 302, response.content.decode()[:2000]
    correction = UsageRecord.objects.get(source="correction")
    assert (
        correction.gpu_seconds == -1800
        and correction.detail["reason"] == "Job 7 was charged twice."
    )
    assert UsageRecord.objects.get(pk=world["usage"].pk).gpu_seconds == 3600  # untouched
    event = timeline(allocation).last()
    assert event.actor == admin and "Job 7 was charged twice." in event.comment
    assert "-1800 GPU-seconds" in event.comment
    # The ledger moves with it at once (not at the next reconcile), its month too.
    assert Allocation.objects.get(pk=allocation.pk).gpu_seconds_used == charged - 1800
    assert months.get().gpu_seconds == month_before - 1800


def test_only_staff_correct_usage_whatever_calls_the_service(world):
    with pytest.raises(PermissionDenied):
        services.usage_correct(
            allocation=world["allocation"],
            by=UserFactory(username="nobody"),
            gpu_seconds=1,
            reason="x",
        )
