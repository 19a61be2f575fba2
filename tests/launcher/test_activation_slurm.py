"""Allocation activation on the real Slurm: the account with its members and GPU-minute cap,
re-running changes nothing, a wrong host key fails it with the reason, suspension blocks it,
resuming opens it, a top-up raises the cap."""

from __future__ import annotations

import pytest

from allocations.models import Allocation, ProjectMembership
from allocations.services import allocation_resume, allocation_suspend
from allocations.services.allocations import allocation_top_up
from launcher.provisioning import allocation_provision
from launcher.slurm import backend as slurm_backend
from tests.launcher.slurm_fixtures import drop_account, make_allocation, slurm_facility  # noqa: F401
from tests.launcher.slurm_members import member_logins

pytestmark = pytest.mark.django_db


def test_activation_creates_the_account_with_members_and_cap(
    project, researcher, slurm_facility, services_env
):
    login = member_logins(services_env)[0]
    ProjectMembership.objects.filter(user=researcher).update(cluster_username=login)
    allocation = make_allocation(project, slurm_facility, gpu_hours=12)
    try:
        allocation = allocation_provision(allocation_id=allocation.pk)

        assert allocation.status == "active" and allocation.activated_at
        state = slurm_backend.slurm_client(slurm_facility).account_state(allocation.account_name)
        assert state.gpu_minutes == 12 * 60 and login in state.users and not state.blocked
        assert services_env["SSH_USER"] not in state.users  # the service account never is one
        # Re-running (a retried task) changes nothing.
        again = slurm_backend.slurm_client(slurm_facility).ensure_account(
            name=allocation.account_name, users=[login], gpu_minutes=720
        )
        assert again.changed is False
        assert allocation_provision(allocation_id=allocation.pk).status == "active"
    finally:
        drop_account(slurm_facility, allocation.account_name)


def test_a_wrong_host_key_fails_activation_with_the_reason(project, slurm_facility):
    other_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
    slurm_facility.backend_settings = {**slurm_facility.backend_settings, "host_key": other_key}
    slurm_facility.save()
    allocation = make_allocation(project, slurm_facility)

    allocation = allocation_provision(allocation_id=allocation.pk)

    assert allocation.status == "failed"
    assert "host key" in allocation.status_reason and "CHANGED" in allocation.status_reason
    assert "refusing to connect" in allocation.status_reason
    assert slurm_backend.slurm_client(slurm_facility).ssh.connects == 0


def test_suspension_blocks_resuming_unblocks_and_a_top_up_raises_the_cap(
    project, researcher, admin, slurm_facility, django_capture_on_commit_callbacks
):
    allocation = allocation_provision(
        allocation_id=make_allocation(project, slurm_facility, gpu_hours=2).pk
    )
    backend = slurm_backend.slurm_client(slurm_facility)
    try:
        with django_capture_on_commit_callbacks(execute=True):  # signals -> (eager) tasks
            allocation_suspend(allocation=allocation, by=admin, comment="audit")
        assert backend.account_state(allocation.account_name).blocked

        with django_capture_on_commit_callbacks(execute=True):
            allocation_resume(allocation=Allocation.objects.get(pk=allocation.pk), by=admin)
        assert not backend.account_state(allocation.account_name).blocked

        with django_capture_on_commit_callbacks(execute=True):
            allocation_top_up(
                allocation=Allocation.objects.get(pk=allocation.pk), gpu_hours=3, by=admin
            )
        assert backend.account_state(allocation.account_name).gpu_minutes == 5 * 60
    finally:
        drop_account(slurm_facility, allocation.account_name)
