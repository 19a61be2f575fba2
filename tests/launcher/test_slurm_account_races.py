"""sacctmgr's answers classified without a cluster: an account added a moment before that
slurmdbd says "doesn't exist" for, while other accounts are being added at once, is a transient
failure (provisioning retries it), where a refusal of the input stays permanent. The real
sacctmgr is exercised in test_slurm_accounts.py; this race cannot be produced on demand."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from launcher.backends.errors import BackendError
from launcher.slurm.accounts import SlurmAccounts
from launcher.slurm.ssh import CommandResult


class Cluster:
    """The SSH connection's `run`, answering each sacctmgr command from a script."""

    target = SimpleNamespace(user="portal")

    def __init__(self, add_user: CommandResult):
        self.add_user, self.sent = add_user, []

    def run(self, args):
        self.sent.append(args)
        if args[:4] == ["sacctmgr", "-i", "add", "user"]:
            return self.add_user
        return CommandResult(tuple(args), 0, "", "")  # no association yet; the account added


def refused(words: str) -> CommandResult:
    return CommandResult(("sacctmgr",), 1, "", words)


def test_an_account_just_added_that_slurmdbd_does_not_see_yet_is_retried():
    cluster = Cluster(refused(" This account 'alloc-7' doesn't exist.\n        Contact your admin"))
    with pytest.raises(BackendError) as failed:
        SlurmAccounts(cluster, cluster="c").ensure_account(
            name="alloc-7", users=["alice"], gpu_minutes=60
        )
    assert not failed.value.permanent and "doesn't exist" in failed.value.message
    assert ["sacctmgr", "-i", "add", "account", "alloc-7"] == cluster.sent[1][:5]


def test_a_refused_association_stays_permanent():
    cluster = Cluster(refused(" Invalid value for user name"))
    with pytest.raises(BackendError) as failed:
        SlurmAccounts(cluster, cluster="c").ensure_account(
            name="alloc-7", users=["alice"], gpu_minutes=60
        )
    assert failed.value.permanent
