"""Slurm as the member (issue 34), on the real Slurm and sshd of `make services`: a member's job
runs as the member's cluster login (squeue's and sacct's user), never as the portal's service
account; from inside it, the member's code can neither cancel another member's job nor lift the
account's GPU-minute cap; a member whose login sudo refuses gets a launch that fails with that
reason, and nothing runs; the service account is a Slurm Operator, not an Administrator."""

from __future__ import annotations

import pytest

from allocations.models import ProjectMembership
from launcher import services
from launcher.backends.contract import BackendError
from launcher.slurm import backend as slurm_backend
from launcher.slurm.records import JobSpec, JobState
from tests.launcher.slurm_fixtures import TINY, slurm_allocation, slurm_facility  # noqa: F401
from tests.launcher.slurm_members import account, job_user, member, other_member  # noqa: F401
from tests.waiting import wait_for

PARAMS = {k: v for k, v in TINY.items() if k != "wall_time_minutes"}

# A member's job that tries what a notebook could try as the old service account. Values
# arrive as arguments; each command's exit status is printed.
ESCAPE = """
scancel "$1"; echo "scancel=$?"
sacctmgr -i modify account where name="$2" set GrpTRESMins=gres/gpu=999999; echo "cap=$?"
sacctmgr -i modify user where name="$3" set adminlevel=Admin; echo "admin=$?"
"""


def test_the_service_account_is_a_slurm_operator_not_an_administrator(slurm):
    level = slurm.ssh.run(
        ["sacctmgr", "-n", "-P", "show", "user", slurm.ssh.target.user, "format=AdminLevel"]
    ).stdout.strip()
    assert level == "Operator"


@pytest.mark.django_db
def test_a_members_batch_job_runs_as_their_login_in_squeue_and_sacct(slurm_allocation, researcher):
    login = ProjectMembership.objects.get(user=researcher).cluster_username
    job = services.job_launch(
        by=researcher, allocation=slurm_allocation, gpus=1, wall_time_minutes=5, params=PARAMS
    )
    job = services.job_submit(job_id=job.pk)
    assert job.state == "pending", job.state_reason
    client = slurm_backend.slurm_client(slurm_allocation.facility)

    users = wait_for(
        lambda: all(job_user(client, job.scheduler_id)) and job_user(client, job.scheduler_id),
        what="squeue and sacct to know the job",
    )
    services.job_cancel(job=job, by=researcher)  # the service account (an Operator) cancels it

    assert login != client.ssh.target.user
    assert users == (login, login)
    assert wait_for(
        lambda: client.status([job.scheduler_id])[job.scheduler_id].state.final, what="the cancel"
    )


def test_a_members_job_can_neither_cancel_another_members_job_nor_lift_the_cap(
    slurm, account, member, other_member, make_bundle, unique
):
    other = slurm.submit(
        JobSpec(token=unique("bob-"), account=account, gpus=0, bundle_dir=make_bundle("sleep 300")),
        user=other_member,
    )
    wait_for(
        lambda: slurm.status([other.job_id])[other.job_id].state is JobState.RUNNING,
        what="the other member's job to run",
    )

    mine = slurm.submit(
        JobSpec(
            token=unique("alice-"),
            account=account,
            gpus=0,
            bundle_dir=make_bundle(ESCAPE),
            args=(other.job_id, account, member),
        ),
        user=member,
    )
    done = wait_for(
        lambda: (s := slurm.status([mine.job_id])[mine.job_id]).state.final and s,
        what="the member's job to end",
    )

    said = dict(
        line.split("=", 1)
        for line in (slurm.tail_as(member, slurm.output_path(mine)) or "").splitlines()
        if "=" in line
    )
    assert done.state is JobState.SUCCEEDED
    assert said.get("scancel") not in (None, "0") and said.get("cap") not in (None, "0")
    assert said.get("admin") not in (None, "0")
    assert slurm.status([other.job_id])[other.job_id].state is JobState.RUNNING
    assert job_user(slurm, other.job_id) == (other_member, other_member)
    assert job_user(slurm, mine.job_id)[1] == member
    assert slurm.account_state(account).gpu_minutes == 600
    level = slurm.ssh.run(
        ["sacctmgr", "-n", "-P", "show", "user", member, "format=AdminLevel"]
    ).stdout.strip()
    assert level == "None"


def test_sudo_refuses_root_unknown_logins_and_the_service_account(
    slurm, account, make_bundle, unique
):
    bundle = make_bundle("id")
    for login in ("root", unique("nosuch")):
        token = unique("refused-")
        with pytest.raises(BackendError) as refused:
            slurm.submit(JobSpec(token=token, account=account, bundle_dir=bundle), user=login)
        assert refused.value.permanent
        assert f"sudo refused to run sbatch as {login}" in refused.value.message
        assert "nothing was run" in refused.value.message
        assert slurm.find_job_by_token(token) is None
        with pytest.raises(BackendError):
            slurm.read_as(login, [("/etc/hostname", 10)])
    with pytest.raises(BackendError) as itself:
        slurm.submit(
            JobSpec(token=unique("self-"), account=account, bundle_dir=bundle),
            user=slurm.ssh.target.user,
        )
    assert itself.value.permanent and "service account" in itself.value.message


@pytest.mark.django_db
@pytest.mark.parametrize("login", ["root", "nosuch-member", "the service account"])
def test_a_launch_whose_login_sudo_refuses_fails_with_the_reason_and_runs_nothing(
    slurm_allocation, researcher, api, services_env, login
):
    service = login == "the service account"
    login = services_env["SSH_USER"] if service else login
    ProjectMembership.objects.filter(user=researcher).update(cluster_username=login)
    job = services.job_launch(
        by=researcher, allocation=slurm_allocation, gpus=1, wall_time_minutes=5, params=PARAMS
    )

    job = services.job_submit(job_id=job.pk)

    assert job.state == "failed" and not job.scheduler_id
    shown = api.as_user(researcher).get(f"/api/v1/jobs/{job.pk}/").json()["state_reason"]
    assert shown.startswith("Submission refused: ")
    if service:  # the facility's service account: refused before anything is sent
        assert "service account" in shown
    else:
        assert f"sudo refused to run sbatch as {login}" in shown
        assert "nothing was run, and nothing runs as the service account instead" in shown
    client = slurm_backend.slurm_client(slurm_allocation.facility)
    assert client.find_job_by_token(job.token) is None


@pytest.mark.django_db
def test_a_member_without_a_cluster_login_is_told_so(slurm_allocation, researcher):
    ProjectMembership.objects.filter(user=researcher).update(cluster_username="")
    job = services.job_launch(
        by=researcher, allocation=slurm_allocation, gpus=1, wall_time_minutes=5, params=PARAMS
    )

    job = services.job_submit(job_id=job.pk)

    assert job.state == "failed" and "no cluster login" in job.state_reason
    assert (
        slurm_backend.slurm_client(slurm_allocation.facility).find_job_by_token(job.token) is None
    )


def test_a_jobs_files_are_read_as_its_member_so_a_planted_symlink_leads_nowhere(
    slurm, account, member, make_bundle, unique
):
    # The job points its "progress" at the service account's authorized_keys (and at a file of
    # another member's): read as the member, neither comes back.
    body = (
        'ln -s "$HOME/../portal/.ssh/authorized_keys" keys.json; '
        "ln -s /home/portal/.ssh/authorized_keys keys2.json; echo done"
    )
    job = slurm.submit(
        JobSpec(token=unique("link-"), account=account, gpus=0, bundle_dir=make_bundle(body)),
        user=member,
    )
    wait_for(lambda: slurm.status([job.job_id])[job.job_id].state.final, what="the job to end")

    found = slurm.read_as(
        member,
        [
            (f"{job.workdir}/keys.json", 4096),
            (f"{job.workdir}/keys2.json", 4096),
            (slurm.output_path(job), 4096),
        ],
    )

    assert found[:2] == [None, None]
    assert found[2] == b"done\n"
    # As the service account the same link would have been followed.
    assert slurm.ssh.read_file(f"{job.workdir}/keys2.json")
