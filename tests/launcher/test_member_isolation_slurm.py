"""A bad login on one member never stops an account's other work, on the real Slurm of `make
services` (issue 21): a legacy membership whose login Slurm refuses ("_x") is left out and
reported, while the suspension still blocks the account, a resumption re-caps it, a removed
member loses their association, and a login Slurm accepts ("0...") works. One allocation
whose sync fails never skips the project's others, and a permanent failure is not retried."""

from __future__ import annotations

import pytest

from allocations import services as allocation_services
from allocations.models import Allocation, ProjectMembership
from launcher import services, tasks
from launcher.provisioning import allocation_provision
from launcher.slurm import backend as slurm_backend
from tests.factories import UserFactory
from tests.launcher.conftest import unique_name
from tests.launcher.slurm_fixtures import drop_account, make_allocation, slurm_facility  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def live_allocation(project, slurm_facility):
    allocation = allocation_provision(
        allocation_id=make_allocation(project, slurm_facility, gpu_hours=4).pk
    )
    assert allocation.status == "active", allocation.status_reason
    yield allocation
    drop_account(slurm_facility, allocation.account_name)


def _state(allocation):
    return slurm_backend.slurm_client(allocation.facility).account_state(allocation.account_name)


def test_a_bad_login_never_stops_a_suspension_a_cap_or_a_removal(
    project, pi, admin, live_allocation, django_capture_on_commit_callbacks, client
):
    digit_login = unique_name("0")  # Slurm accepts a leading digit; the old rule refused it
    niels = UserFactory(username="niels")
    with django_capture_on_commit_callbacks(execute=True):
        allocation_services.project_member_add(
            project=project, by=pi, user=niels, cluster_username=digit_login
        )
    assert digit_login in _state(live_allocation).users
    # A row written before the one rule (the old rule let "_x" through); Slurm refuses it.
    legacy = ProjectMembership.objects.create(
        project=project, user=UserFactory(username="lx"), cluster_username="_x"
    )

    with django_capture_on_commit_callbacks(execute=True):  # signal -> (eager) sync task
        allocation_services.allocation_suspend(allocation=live_allocation, by=admin)
    assert _state(live_allocation).blocked is True
    legacy.refresh_from_db()
    assert "invalid cluster username '_x'" in legacy.sync_error

    with django_capture_on_commit_callbacks(execute=True):
        allocation_services.project_member_remove(project=project, by=pi, user=niels)
    assert digit_login not in _state(live_allocation).users

    with django_capture_on_commit_callbacks(execute=True):
        allocation_services.allocation_resume(allocation=live_allocation, by=admin)
    Allocation.objects.filter(pk=live_allocation.pk).update(gpu_hours=7)
    live_allocation.refresh_from_db()
    assert (
        services.allocation_sync(allocation=live_allocation)
        == "active; 1 member(s) left out (see the staff home)"
    )
    state = _state(live_allocation)
    assert state.blocked is False and state.gpu_minutes == 7 * 60

    client.force_login(admin)
    assert "invalid cluster username &#x27;_x&#x27;" in client.get("/staff/").content.decode()


def test_one_failing_allocation_never_skips_the_projects_others(project, admin, live_allocation):
    Allocation.objects.filter(pk=live_allocation.pk).update(status="suspended")
    # Newest first: this one is synced first, and its account does not exist on the cluster.
    broken = make_allocation(project, live_allocation.facility, status="active")

    done = services.project_sync_members(project_id=project.pk)

    assert done[broken.pk].startswith("failed: ")
    assert done[live_allocation.pk] == "blocked"
    assert _state(live_allocation).blocked is True


def test_a_permanent_failure_is_reported_not_retried(project, live_allocation):
    broken = make_allocation(project, live_allocation.facility, status="active")

    result = tasks.sync_allocation_account.apply(args=[broken.pk])

    assert result.successful()
    assert result.result.startswith("refused: account ") and "does not exist" in result.result
