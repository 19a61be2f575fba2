"""Slurm accounts through sacctmgr: an allocation's account with its GPU-minute cap
(GrpTRESMins), its members' user associations, and blocking (GrpSubmitJobs=0, jobs cancelled).
Every operation is idempotent: only what differs is changed. Run as the service account (a
Slurm Operator; commands.py)."""

from __future__ import annotations

import re

from launcher.backends.errors import BackendError, check_cluster_username, check_name

from .commands import SlurmCommands
from .records import AccountState
from .ssh import CommandResult

_NOTHING_TO_DO = ("Nothing new added", "Nothing modified", "already exists")


class SlurmAccounts(SlurmCommands):
    """An allocation's Slurm account: members, cap, block."""

    def _sacctmgr(self, *args: str) -> CommandResult:
        return self._run(["sacctmgr", "-i", *args], ok_markers=_NOTHING_TO_DO)

    def _show(self, *args: str) -> list[list[str]]:
        out = self._run(["sacctmgr", "-n", "-P", "show", *args]).stdout
        return [line.split("|") for line in out.splitlines() if line.strip()]

    def _add_users(self, name: str, users: list[str]) -> None:
        """Associate `users` with an account that exists (it was just listed or just added).
        slurmdbd answers "doesn't exist" for an account added a moment before while other
        accounts are being added at once (seen with four provisionings in parallel): that is
        its cache catching up, so it is a transient failure, retried, not a permanent one."""
        try:
            self._sacctmgr(
                "add",
                "user",
                f"name={','.join(users)}",
                f"account={name}",
                f"cluster={self.cluster}",
            )
        except BackendError as error:
            if error.permanent and "doesn't exist" in error.message:
                raise BackendError(error.message, permanent=False) from error
            raise

    def account_state(self, name: str) -> AccountState | None:
        """The account's users, cap and block flag as slurmdbd holds them, or None if absent."""
        check_name(name, "account")
        rows = self._show(
            "assoc",
            "where",
            f"account={name}",
            f"cluster={self.cluster}",
            "format=User,GrpTRESMins,GrpSubmit",
        )
        if not rows:
            return None
        users = frozenset(r[0] for r in rows if r[0])
        account_row = next((r for r in rows if not r[0]), ["", "", ""])
        match = re.search(r"gres/gpu=(\d+)", account_row[1])
        return AccountState(
            name=name,
            users=users,
            gpu_minutes=int(match.group(1)) if match else None,
            blocked=account_row[2] == "0",
        )

    def ensure_account(self, *, name: str, users: list[str], gpu_minutes: int) -> AccountState:
        """Make the account exist with (at least) these users and exactly this GPU-minute cap.

        Idempotent: only what is missing or different is changed, and `changed` says whether
        anything was. The service account is never one of the users: members submit as
        themselves (`submit`), so nothing can run on the account as the service account.
        """
        check_name(name, "account")
        wanted = self._members(users)
        self._check_minutes(gpu_minutes)
        state = self.account_state(name)
        if state is None:  # one command creates the account with its cap
            self._sacctmgr(
                "add",
                "account",
                name,
                f"cluster={self.cluster}",
                "description=portal-allocation",
                "organization=portal",
                f"GrpTRESMins=gres/gpu={gpu_minutes}",
            )
        missing = sorted(wanted - (state.users if state else frozenset()))
        if missing:
            self._add_users(name, missing)
        if state is not None and state.gpu_minutes != gpu_minutes:
            self.set_cap(name=name, gpu_minutes=gpu_minutes)
        changed = state is None or bool(missing) or state.gpu_minutes != gpu_minutes
        users_now = (state.users if state else frozenset()) | frozenset(missing)
        return AccountState(
            name=name,
            users=users_now,
            gpu_minutes=gpu_minutes,
            blocked=state.blocked if state else False,
            changed=changed,
        )

    def sync_users(self, *, name: str, users: list[str]) -> AccountState:
        """Make the account's user associations exactly `users`: add the missing, delete the
        others (their pending and running jobs on the account are cancelled first, so a removed
        member cannot keep computing). The service account's own association, which earlier
        versions added to every account, is one of the others: it goes, with any job it still
        runs there. Idempotent; the account must exist (see `ensure_account`)."""
        check_name(name, "account")
        wanted = self._members(users)
        state = self.account_state(name)
        if state is None:
            raise BackendError(f"account {name} does not exist", permanent=True)
        missing = sorted(wanted - state.users)
        extra = sorted(state.users - wanted)
        if missing:
            self._add_users(name, missing)
        for user in extra:
            self._run(
                ["scancel", f"--account={name}", f"--user={user}"], ok_markers=("Invalid user",)
            )
        if extra:
            self._run(
                [
                    "sacctmgr",
                    "-i",
                    "delete",
                    "user",
                    f"name={','.join(extra)}",
                    f"account={name}",
                    f"cluster={self.cluster}",
                ],
                ok_markers=("Nothing deleted",),
            )
        return AccountState(
            name=name,
            users=frozenset(wanted),
            gpu_minutes=state.gpu_minutes,
            blocked=state.blocked,
            changed=bool(missing or extra),
        )

    def _members(self, users: list[str]) -> set[str]:
        """Valid member logins; the service account is never one (BackendError)."""
        logins = {check_cluster_username(u) for u in users}
        if self.ssh.target.user in logins:
            raise BackendError(
                f"{self.ssh.target.user} is the portal's service account, never a "
                "member of an account: members' work runs as the members",
                permanent=True,
            )
        return logins

    @staticmethod
    def _check_minutes(gpu_minutes: int) -> None:
        if not isinstance(gpu_minutes, int) or isinstance(gpu_minutes, bool) or gpu_minutes < 0:
            raise BackendError(f"invalid GPU-minute cap {gpu_minutes!r}", permanent=True)

    def set_cap(self, *, name: str, gpu_minutes: int) -> None:
        """Set GrpTRESMins=gres/gpu=<minutes> on the account. Idempotent."""
        check_name(name, "account")
        self._check_minutes(gpu_minutes)
        self._sacctmgr(
            "modify",
            "account",
            "where",
            f"name={name}",
            f"cluster={self.cluster}",
            "set",
            f"GrpTRESMins=gres/gpu={gpu_minutes}",
        )

    def block_account(self, *, name: str) -> None:
        """Refuse submissions (GrpSubmitJobs=0) and cancel every job of the account. Idempotent."""
        check_name(name, "account")
        self._sacctmgr(
            "modify",
            "account",
            "where",
            f"name={name}",
            f"cluster={self.cluster}",
            "set",
            "GrpSubmitJobs=0",
        )
        self._run(["scancel", f"--account={name}"])

    def unblock_account(self, *, name: str) -> None:
        """Lift GrpSubmitJobs (back to unlimited). Idempotent."""
        check_name(name, "account")
        self._sacctmgr(
            "modify",
            "account",
            "where",
            f"name={name}",
            f"cluster={self.cluster}",
            "set",
            "GrpSubmitJobs=-1",
        )
