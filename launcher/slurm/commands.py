"""The plumbing every Slurm command shares: one `SSHConnection` to the login node, the one place
a command's failure is classified (transient or permanent), and who a member's work runs as.

The SSH login user is the portal's service account. It is a Slurm Operator (`sacctmgr add user
<u> adminlevel=Operator`): enough to create accounts, add and remove user associations, set
GrpTRESMins and GrpSubmitJobs, and scancel any job (blocks, removed members, a user's stop). It
is never associated with the accounts it manages and never runs a member's work: a job or a
notebook is submitted as the member's cluster login (`sudo -n -u <login> sbatch ...`), and what
a member's job wrote is read as that member (`sudo -n -u <login> tail ...`), through the narrow
sudoers rule of docs/security.md. When sudo refuses, the submission fails with that reason;
nothing falls back to the service account. Each job's folder (under `jobs_dir`, owned by the
service account) is shared with its member alone by a POSIX ACL.

accounts.py (sacctmgr) and jobs.py (sbatch, squeue, sacct, scancel) build on `SlurmCommands`;
client.py joins them as `SlurmClient`.
"""

from __future__ import annotations

import base64
import binascii
import re

from launcher.backends.errors import BackendError, check_cluster_username, check_name

from .ssh import CommandResult, SSHConnection

JOB_ID_RE = re.compile(r"^[0-9]+(_[0-9]+)?$")

# Failures that mean "the Slurm daemons are unreachable right now", worth retrying later.
_TRANSIENT_MARKERS = (
    "Unable to contact slurm controller",
    "Socket timed out",
    "Connection refused",
    "Problem talking to the database",
    "slurmdbd",
    "Transport endpoint",
    "try again",
    "Zero Bytes were transmitted",
    "Slurm backup controller in standby mode",
)

# Reads files a member's job wrote, as that member (`sudo -n -u USER tail -c N`), in one round
# trip: `USER PATH N [PATH N]...`; one line per file: `+<base64>` or `-` (absent, unreadable,
# or not a file tail could end within its time). Exit 77 with sudo's words when sudo refuses.
_READ_SCRIPT = r"""
set -u
user=$1; shift
tail=$(command -v tail) || exit 1
if ! why=$(sudo -n -l -u "$user" "$tail" 2>&1 >/dev/null); then echo "$why" >&2; exit 77; fi
while [ $# -ge 2 ]; do
  if data=$(set -o pipefail; timeout -k 2 20 sudo -n -u "$user" "$tail" -c "$2" -- "$1" 2>/dev/null | base64 -w0); then
    echo "+$data"
  else
    echo "-"
  fi
  shift 2
done
"""

# Whether sudo lets the service account run sbatch and tail as USER (exit 77 with its words).
_CAN_RUN_AS_SCRIPT = r"""
set -u
for cmd in sbatch tail; do
  path=$(command -v "$cmd") || { echo "$cmd is not on the login node's PATH" >&2; exit 1; }
  if ! why=$(sudo -n -l -u "$1" "$path" 2>&1 >/dev/null); then echo "$cmd"; echo "$why" >&2; exit 77; fi
done
"""


class SlurmCommands:
    """A Slurm cluster reached through one `SSHConnection`: commands, members, files."""

    def __init__(
        self,
        ssh: SSHConnection,
        *,
        cluster: str,
        partition: str | None = None,
        jobs_dir: str = "portal-jobs",
    ) -> None:
        self.ssh = ssh
        self.cluster = check_name(cluster, "cluster")
        self.partition = partition
        self.jobs_dir = jobs_dir

    def _run(self, args: list[str], *, ok_markers: tuple[str, ...] = ()) -> CommandResult:
        """Run a Slurm command; a non-zero exit becomes a BackendError unless its output says
        there was nothing to do (one of `ok_markers`). Every command we send is safe to repeat,
        so the SSH layer may re-send it after a transient failure."""
        return self._checked(args, self.ssh.run(args), ok_markers=ok_markers)

    @staticmethod
    def _checked(
        args: list[str], result: CommandResult, *, ok_markers: tuple[str, ...] = ()
    ) -> CommandResult:
        text = f"{result.stdout}\n{result.stderr}"
        if result.ok() or (ok_markers and any(m in text for m in ok_markers)):
            return result
        transient = result.rc == 75 or any(m in text for m in _TRANSIENT_MARKERS)
        raise BackendError(
            f"{args[0]} failed (exit {result.rc}): {text.strip()[:500]}", permanent=not transient
        )

    # -- members -----------------------------------------------------------------------------

    def member(self, user: str) -> str:
        """`user` if the portal may run work as it: a valid cluster login that is not the
        service account (a permanent BackendError otherwise). Whether the cluster lets it is
        sudo's answer (`check_member`, and every submission)."""
        login = check_cluster_username(user)
        if login == self.ssh.target.user:
            raise BackendError(
                f"the cluster login {login!r} is the portal's service account: a member's work "
                "never runs as it; give the member their own cluster login",
                permanent=True,
            )
        return login

    def refused(self, user: str, why: str, *, command: str = "sbatch") -> BackendError:
        """The error of a member the cluster's sudo does not let the portal act as (short: a
        job's reason keeps 300 characters; sudo's own words come last)."""
        said = " ".join(why.split())[:120]
        return BackendError(
            f"the cluster's sudo refused to run {command} as {user} for the portal's service "
            f"account ({self.ssh.target.user}): nothing was run, and nothing runs as the service "
            f"account instead. The site must allow it (docs/security.md, Slurm)"
            f"{f' [{said}]' if said else ''}",
            permanent=True,
        )

    def check_member(self, user: str) -> str:
        """The login if sudo lets the service account run sbatch and tail as it (one round
        trip); a permanent BackendError that says why not."""
        login = self.member(user)
        result = self.ssh.run(["bash", "-c", _CAN_RUN_AS_SCRIPT, "portal-can-run-as", login])
        if result.rc == 77:
            raise self.refused(login, result.stderr, command=result.stdout.strip() or "sbatch")
        self._checked(["sudo"], result)
        return login

    @staticmethod
    def _check_job_id(job_id: str) -> str:
        if not isinstance(job_id, str) or not JOB_ID_RE.match(job_id):
            raise BackendError(f"invalid job id {job_id!r}", permanent=True)
        return job_id

    # -- files -------------------------------------------------------------------------------

    def read_file(self, path: str, *, max_bytes: int = 65536) -> bytes:
        """The last `max_bytes` of a file on the login node (relative paths: from home), read
        as the service account: only for files no member can write (see `read_as`)."""
        return self.ssh.read_file(path, max_bytes=max_bytes)

    def tail(self, path: str, *, lines: int = 50) -> str:
        """The last `lines` lines of a text file on the login node, read as the service
        account (see `read_file`)."""
        data = self.read_file(path, max_bytes=max(4096, lines * 512))
        return "\n".join(data.decode("utf-8", "replace").splitlines()[-lines:])

    def read_as(self, user: str, files: list[tuple[str, int]]) -> list[bytes | None]:
        """The last N bytes of each (path, N), read as the member `user` (sudo tail), in one
        round trip; None for a file that is absent or that `user` cannot read. For what a
        member's job wrote: a symlink it planted can only lead to what the member may read
        anyway. A permanent BackendError when sudo refuses."""
        login = self.member(user)
        args = ["bash", "-c", _READ_SCRIPT, "portal-read-as", login]
        for path, max_bytes in files:
            if not isinstance(max_bytes, int) or isinstance(max_bytes, bool) or max_bytes < 1:
                raise BackendError(f"invalid byte count {max_bytes!r}", permanent=True)
            args += [path, str(max_bytes)]
        result = self.ssh.run(args)
        if result.rc == 77:
            raise self.refused(login, result.stderr, command="tail")
        lines = self._checked(args, result).stdout.splitlines()
        if len(lines) != len(files):
            raise BackendError(f"unexpected reply reading files as {login}", permanent=False)
        found: list[bytes | None] = []
        for line in lines:
            try:
                found.append(
                    base64.b64decode(line[1:], validate=True) if line.startswith("+") else None
                )
            except binascii.Error:
                found.append(None)
        return found

    def tail_as(self, user: str, path: str, *, lines: int = 50) -> str | None:
        """The last `lines` lines of a text file a member's job wrote, read as the member."""
        data = self.read_as(user, [(path, max(4096, lines * 512))])[0]
        if data is None:
            return None
        return "\n".join(data.decode("utf-8", "replace").splitlines()[-lines:])
