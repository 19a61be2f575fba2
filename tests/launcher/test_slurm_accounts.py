"""Slurm accounts with GPU-minute caps, created over real SSH with sacctmgr."""

from __future__ import annotations

import pytest

from launcher.backends.contract import BackendError
from launcher.slurm.client import SlurmClient
from launcher.slurm.records import JobSpec
from tests.launcher.slurm_members import member, other_member  # noqa: F401  (fixtures)
from tests.waiting import wait_for


def assoc_dump(slurm: SlurmClient, account: str) -> str:
    """What an admin would see with `sacctmgr show assoc` for the account."""
    return slurm.ssh.run(
        [
            "sacctmgr",
            "-n",
            "-P",
            "show",
            "assoc",
            "where",
            f"account={account}",
            "format=Account,User,GrpTRESMins,GrpSubmit",
        ]
    ).stdout


def test_it_creates_the_account_with_members_and_cap_visible_in_sacctmgr(slurm, account):
    state = slurm.ensure_account(name=account, users=["alice_ct", "bob_ct"], gpu_minutes=6000)

    lines = set(assoc_dump(slurm, account).splitlines())
    assert f"{account}||gres/gpu=6000|" in lines
    assert {f"{account}|alice_ct||", f"{account}|bob_ct||"} <= lines
    # The service account is never a user of the accounts it manages: nothing runs there as it.
    assert not any(line.startswith(f"{account}|{slurm.ssh.target.user}|") for line in lines)
    assert state.gpu_minutes == 6000 and state.users == {"alice_ct", "bob_ct"}
    assert not state.blocked


def test_an_association_of_the_service_account_is_removed_by_the_sync(slurm, account):
    # Earlier versions added the service account to every account (it submitted for members).
    service = slurm.ssh.target.user
    slurm.ssh.run(
        [
            "sacctmgr",
            "-i",
            "add",
            "user",
            f"name={service}",
            f"account={account}",
            f"cluster={slurm.cluster}",
        ]
    )
    assert service in slurm.account_state(account).users

    state = slurm.sync_users(name=account, users=["alice_ct"])

    assert state.users == {"alice_ct"} and slurm.account_state(account).users == {"alice_ct"}
    with pytest.raises(BackendError) as refused:
        slurm.ensure_account(name=account, users=[service], gpu_minutes=600)
    assert refused.value.permanent and "service account" in refused.value.message


def test_rerunning_ensure_account_changes_nothing(slurm, account):
    slurm.ensure_account(name=account, users=["alice_ct"], gpu_minutes=120)
    before = assoc_dump(slurm, account)

    again = slurm.ensure_account(name=account, users=["alice_ct"], gpu_minutes=120)

    assert again.changed is False
    assert assoc_dump(slurm, account) == before


def test_a_top_up_raises_the_cap(slurm, account):
    slurm.ensure_account(name=account, users=[], gpu_minutes=60)

    slurm.set_cap(name=account, gpu_minutes=180)

    assert f"{account}||gres/gpu=180|" in assoc_dump(slurm, account).splitlines()
    assert slurm.ensure_account(name=account, users=[], gpu_minutes=240).changed is True
    assert slurm.account_state(account).gpu_minutes == 240


def test_a_blocked_account_refuses_jobs_and_loses_its_running_ones(
    slurm, account, member, make_bundle, unique
):
    slurm.ensure_account(name=account, users=[member], gpu_minutes=600)
    bundle = make_bundle("sleep 60")
    running = slurm.submit(
        JobSpec(token=unique("tok-"), account=account, bundle_dir=bundle), user=member
    )
    wait_for(
        lambda: slurm.status([running.job_id])[running.job_id].state.value == "running",
        what="job to start",
    )

    slurm.block_account(name=account)

    assert slurm.account_state(account).blocked
    final = wait_for(
        lambda: (s := slurm.status([running.job_id])[running.job_id]).state.final and s,
        what="job to be cancelled",
    )
    assert final.state.value == "cancelled"
    with pytest.raises(BackendError) as refused:
        slurm.submit(JobSpec(token=unique("tok-"), account=account, bundle_dir=bundle), user=member)
    assert refused.value.permanent
    assert "policy" in refused.value.message

    slurm.unblock_account(name=account)
    assert not slurm.account_state(account).blocked
    slurm.submit(
        JobSpec(token=unique("tok-"), account=account, bundle_dir=make_bundle("true")), user=member
    )


@pytest.mark.parametrize("bad", ["a;touch /tmp/pwned", "a,b", "-i", "A b", "$(id)", "x" * 65])
def test_names_that_could_inject_into_sacctmgr_are_refused(slurm, bad, unique):
    with pytest.raises(BackendError) as refused:
        slurm.ensure_account(name=bad, users=[], gpu_minutes=1)
    assert refused.value.permanent
    with pytest.raises(BackendError):
        slurm.ensure_account(name=unique("t"), users=[bad], gpu_minutes=1)
    out = slurm.ssh.run(["sacctmgr", "-n", "-P", "show", "account", "format=Account"]).stdout
    assert bad not in out.splitlines()
