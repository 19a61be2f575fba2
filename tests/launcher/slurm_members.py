"""Members' cluster logins on the real Slurm of `make services` (no Django): the unix users that
scripts/services/slurm.sh makes (SLURM_MEMBERS in services.env, in the group the sudoers rule
names), fixtures for them, an `account` with both as its users (overriding conftest's, whose
account has none: jobs run as a member, and a member needs an association), and a way to run a
command as a member the way the portal does (`sudo -n -u <login>` over the service account's
SSH). Import the fixtures by name into a test module to use them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from launcher.slurm.client import SlurmClient
from launcher.slurm.ssh import CommandResult
from tests.launcher.conftest import START_HINT, unique_name


def member_logins(env: dict[str, str]) -> list[str]:
    """The test cluster's member logins (two at least), from services.env."""
    logins = [m for m in env.get("SLURM_MEMBERS", "").split(",") if m]
    if len(logins) < 2:
        pytest.fail(f"services.env has no SLURM_MEMBERS (two member logins); {START_HINT}")
    return logins


@pytest.fixture
def member(services_env: dict[str, str]) -> str:
    """A member's cluster login (slurm-alice)."""
    return member_logins(services_env)[0]


@pytest.fixture
def other_member(services_env: dict[str, str]) -> str:
    """Another member's cluster login (slurm-bob)."""
    return member_logins(services_env)[1]


@pytest.fixture
def account(slurm: SlurmClient, member: str, other_member: str) -> Iterator[str]:
    """A fresh Slurm account with a generous cap and both members; its jobs are cancelled and
    it is deleted after."""
    name = unique_name("t")
    slurm.ensure_account(name=name, users=[member, other_member], gpu_minutes=600)
    yield name
    slurm.ssh.run(["scancel", f"--account={name}"])
    slurm.ssh.run(["sacctmgr", "-i", "delete", "account", f"name={name}"])


def as_member(slurm: SlurmClient, login: str, args: list[str]) -> CommandResult:
    """Run `args` (sbatch or tail: what the sudoers rule allows) as the member `login`."""
    return slurm.ssh.run(["sudo", "-n", "-u", login, *args])


def job_user(slurm: SlurmClient, job_id: str) -> tuple[str, str]:
    """(squeue's user of the job, sacct's user of the job), read by the service account."""
    queued = slurm.ssh.run(["squeue", "-h", "-a", "-t", "all", "-j", job_id, "-o", "%u"]).stdout
    accounted = slurm.ssh.run(["sacct", "-n", "-P", "-X", "-a", "-j", job_id, "-o", "User"]).stdout
    first = lambda text: (text.strip().splitlines() or [""])[0].strip()  # noqa: E731
    return first(queued), first(accounted)
