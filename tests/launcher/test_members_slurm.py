"""Members in the browser, mirrored to the real Slurm of `make services`: a PI adds a member on
the project page, who then sees the project and can launch on its allocation (their Slurm
association exists); the PI removes them, they no longer can, and the association is gone.
And an extension requested and approved raises the account's GrpTRESMins."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from allocations import services as allocation_services
from allocations.models import Allocation, ProjectMembership
from launcher.models import Job
from launcher.provisioning import allocation_provision
from launcher.slurm import backend as slurm_backend
from tests.browser import login
from tests.factories import UserFactory
from tests.launcher.slurm_fixtures import drop_account, make_allocation, slurm_facility  # noqa: F401
from tests.launcher.slurm_members import member_logins

pytestmark = pytest.mark.django_db(transaction=True)
TINY = {
    "model": "resnet18",
    "epochs": 1,
    "size": 32,
    "synthetic_n": 16,
    "batch_size": 4,
    "threads": 1,
    "bootstrap": 20,
}


@pytest.fixture
def live_allocation(project, slurm_facility):
    allocation = allocation_provision(
        allocation_id=make_allocation(project, slurm_facility, gpu_hours=4).pk
    )
    assert allocation.status == "active", allocation.status_reason
    yield allocation
    drop_account(slurm_facility, allocation.account_name)


def _api(user) -> APIClient:
    from portal.tokens.services import account_token_create

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {account_token_create(user=user)[1]}")
    return client


def _users(allocation) -> frozenset[str]:
    return (
        slurm_backend.slurm_client(allocation.facility).account_state(allocation.account_name).users
    )


def test_a_member_added_and_removed_in_the_browser_gains_and_loses_slurm_access(
    page, live_server, pi, project, live_allocation, services_env
):
    niels = UserFactory(username="niels", first_name="Niels")
    login_name = member_logins(services_env)[1]  # a login of the cluster's: the job runs as it

    login(page, live_server, pi.username)
    page.goto(f"{live_server.url}/projects/{project.pk}/")
    page.get_by_label("Username or email").fill("niels@example.org")
    page.get_by_label("Cluster login (optional)").fill(login_name)
    page.get_by_role("button", name="Add member").click()
    page.get_by_text("niels was added to ABC-DEF-001.").wait_for()
    assert login_name in _users(live_allocation)

    page.context.clear_cookies()
    login(page, live_server, "niels")
    page.get_by_role("link", name="ABC-DEF-001", exact=True).click()
    page.get_by_role("link", name=f"#{live_allocation.pk}", exact=True).click()
    assert page.get_by_role("button", name="Launch job").is_visible()
    launched = _api(niels).post(
        "/api/v1/jobs/",
        {"allocation": live_allocation.pk, "gpus": 1, "wall_time_minutes": 2, "params": TINY},
        format="json",
    )
    assert launched.status_code == 201, launched.json()
    job = Job.objects.get(pk=launched.json()["id"])
    assert job.scheduler_id, (
        job.state_reason
    )  # submitted to the real Slurm on the project's account
    _api(niels).post(f"/api/v1/jobs/{job.pk}/cancel/")

    page.context.clear_cookies()
    login(page, live_server, pi.username)
    page.goto(f"{live_server.url}/projects/{project.pk}/")
    page.get_by_role("button", name="Remove niels").click()
    page.get_by_text("niels was removed from ABC-DEF-001.").wait_for()
    assert login_name not in _users(live_allocation)
    assert not ProjectMembership.objects.filter(user=niels).exists()

    refused = _api(niels).post(
        "/api/v1/jobs/",
        {"allocation": live_allocation.pk, "gpus": 1, "wall_time_minutes": 2, "params": TINY},
        format="json",
    )
    assert refused.status_code == 400 and "allocation" in refused.json()
    page.context.clear_cookies()
    login(page, live_server, "niels")
    assert page.goto(f"{live_server.url}/allocations/{live_allocation.pk}/").status == 404


def test_an_approved_extension_shows_in_the_slurm_limits(
    project, researcher, reviewer, live_allocation, django_capture_on_commit_callbacks
):
    backend = slurm_backend.slurm_client(live_allocation.facility)
    assert backend.account_state(live_allocation.account_name).gpu_minutes == 4 * 60
    end = live_allocation.end_date + dt.timedelta(days=14)
    with django_capture_on_commit_callbacks(execute=True):
        req = allocation_services.request_create(
            by=researcher,
            project=project,
            submit=True,
            facility=live_allocation.facility,
            kind="full",
            purpose="extension",
            extends=live_allocation,
            gpu_hours=2,
            start_date=timezone.localdate(),
            end_date=end,
            justification="Two more weeks to finish the last folds of the sweep.",
        )
    with django_capture_on_commit_callbacks(execute=True):  # signal -> (eager) sync task
        allocation_services.request_approve(request=req, by=reviewer)
    allocation = Allocation.objects.get(pk=live_allocation.pk)
    assert allocation.end_date == end and allocation.gpu_hours == 6
    assert backend.account_state(allocation.account_name).gpu_minutes == 6 * 60
