"""The Slurm backend: sacctmgr, sbatch, squeue, sacct and scancel on a login node over SSH.

The SSH login user is the portal's service account. It must be a Slurm administrator
(`sacctmgr add user <u> adminlevel=Admin`) to manage accounts, and it is added to every account
it manages so that it can submit on the members' behalf (`sbatch --account`).
"""

from __future__ import annotations

import datetime as dt
import re
import secrets
from pathlib import PurePosixPath

from . import parse as slurm_parse
from .parse import NamedJob
from launcher.backends.base import (
    TOKEN_RE, AccountState, BackendError, JobSpec, JobStatus, SchedulerClient, SubmitResult,
    UsageRow, check_cluster_username, check_name,
)
from .ssh import CommandResult, SSHConnection

JOB_ID_RE = re.compile(r"^[0-9]+(_[0-9]+)?$")
# A folder the portal staged earlier (what `submit` returned as `workdir`).
_PREFIX_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$")  # the start of a job name
_WORKDIR_RE = re.compile(r"^[A-Za-z0-9_./-]{1,300}$")

# A notebook session's jobs are named so (launcher/notebooks/hub/slurm.py submits them); they
# are charged per session (launcher/slurm/notebooks.py), never by the account's usage ingestion.
NOTEBOOK_JOB_PREFIX = "portal-nb-"

# Failures that mean "the Slurm daemons are unreachable right now", worth retrying later.
_TRANSIENT_MARKERS = (
    "Unable to contact slurm controller", "Socket timed out", "Connection refused",
    "Problem talking to the database", "slurmdbd", "Transport endpoint", "try again",
    "Zero Bytes were transmitted", "Slurm backup controller in standby mode",
)
_NOTHING_TO_DO = ("Nothing new added", "Nothing modified", "already exists")

# Runs on the login node. Under a per-token lock it looks the token up (squeue keeps finished
# jobs for MinJobAge, sacct after that) and only submits if nothing carries it, so a re-sent
# submission after a lost reply never makes a second job. `staged` is this attempt's own fresh
# folder (never a submitted job's): removed when a job with the token exists or sbatch fails.
# Prints `new ID` or `existing ID|WORKDIR`. Values arrive as positional arguments ("$@"), never
# spliced into this text.
_SUBMIT_SCRIPT = r"""
set -u
token=$1; lock=$2; staged=$3; shift 3
exec 9>>"$lock"
flock -w 60 9 || { echo "lock busy: $lock" >&2; exit 75; }
q=$(squeue -h -a -t all --name="$token" -o '%F|%Z') || exit 75
a=$(sacct -n -X -a -P --name="$token" -S now-60days -o JobID,WorkDir) || exit 75
found=$(printf '%s\n%s\n' "$q" "$a" | sed -e 's/^\([0-9]*\)[_.][^|]*|/\1|/' | grep -m1 '^[0-9][0-9]*|')
if [ -n "$found" ]; then
  [ -n "$staged" ] && rm -rf -- "$staged"
  echo "existing $found"; exit 0
fi
out=$(sbatch --parsable "$@") || { rc=$?; [ -n "$staged" ] && rm -rf -- "$staged"; exit $rc; }
echo "new ${out%%;*}"
"""

class SlurmClient(SchedulerClient):
    """A Slurm cluster reached through one `SSHConnection`."""

    def __init__(self, ssh: SSHConnection, *, cluster: str, partition: str | None = None,
                 jobs_dir: str = "portal-jobs") -> None:
        self.ssh = ssh
        self.cluster = check_name(cluster, "cluster")
        self.partition = partition
        self.jobs_dir = jobs_dir

    # -- plumbing -----------------------------------------------------------------------------

    def _run(self, args: list[str], *, ok_markers: tuple[str, ...] = ()) -> CommandResult:
        """Run a Slurm command; a non-zero exit becomes a BackendError unless its output says
        there was nothing to do (one of `ok_markers`). Every command we send is safe to repeat,
        so the SSH layer may re-send it after a transient failure."""
        result = self.ssh.run(args)
        text = f"{result.stdout}\n{result.stderr}"
        if result.ok() or (ok_markers and any(m in text for m in ok_markers)):
            return result
        transient = result.rc == 75 or any(m in text for m in _TRANSIENT_MARKERS)
        raise BackendError(f"{args[0]} failed (exit {result.rc}): {text.strip()[:500]}",
                           permanent=not transient)

    def _sacctmgr(self, *args: str) -> CommandResult:
        return self._run(["sacctmgr", "-i", *args], ok_markers=_NOTHING_TO_DO)

    def _show(self, *args: str) -> list[list[str]]:
        out = self._run(["sacctmgr", "-n", "-P", "show", *args]).stdout
        return [line.split("|") for line in out.splitlines() if line.strip()]

    # -- accounts -----------------------------------------------------------------------------

    def account_state(self, name: str) -> AccountState | None:
        """The account's users, cap and block flag as slurmdbd holds them, or None if absent."""
        check_name(name, "account")
        rows = self._show("assoc", "where", f"account={name}", f"cluster={self.cluster}",
                          "format=User,GrpTRESMins,GrpSubmit")
        if not rows:
            return None
        users = frozenset(r[0] for r in rows if r[0])
        account_row = next((r for r in rows if not r[0]), ["", "", ""])
        match = re.search(r"gres/gpu=(\d+)", account_row[1])
        return AccountState(name=name, users=users, gpu_minutes=int(match.group(1)) if match else None,
                            blocked=account_row[2] == "0")

    def ensure_account(self, *, name: str, users: list[str], gpu_minutes: int) -> AccountState:
        """Make the account exist with (at least) these users and exactly this GPU-minute cap.

        Idempotent: only what is missing or different is changed, and `changed` says whether
        anything was. The service user is always added so the portal can submit for members.
        """
        check_name(name, "account")
        wanted = {check_cluster_username(u) for u in users} | {self.ssh.target.user}
        self._check_minutes(gpu_minutes)
        state = self.account_state(name)
        if state is None:  # one command creates the account with its cap
            self._sacctmgr("add", "account", name, f"cluster={self.cluster}",
                           "description=portal-allocation", "organization=portal",
                           f"GrpTRESMins=gres/gpu={gpu_minutes}")
        missing = sorted(wanted - (state.users if state else frozenset()))
        if missing:
            self._sacctmgr("add", "user", f"name={','.join(missing)}", f"account={name}",
                           f"cluster={self.cluster}")
        if state is not None and state.gpu_minutes != gpu_minutes:
            self.set_cap(name=name, gpu_minutes=gpu_minutes)
        changed = state is None or bool(missing) or state.gpu_minutes != gpu_minutes
        users_now = (state.users if state else frozenset()) | frozenset(missing)
        return AccountState(name=name, users=users_now, gpu_minutes=gpu_minutes,
                            blocked=state.blocked if state else False, changed=changed)

    def sync_users(self, *, name: str, users: list[str]) -> AccountState:
        """Make the account's user associations exactly `users` (plus the service user): add
        the missing, delete the others (their pending and running jobs on the account are
        cancelled first, so a removed member cannot keep computing). Idempotent; the account
        must exist (see `ensure_account`)."""
        check_name(name, "account")
        service = self.ssh.target.user
        wanted = {check_cluster_username(u) for u in users} | {service}
        state = self.account_state(name)
        if state is None:
            raise BackendError(f"account {name} does not exist", permanent=True)
        missing = sorted(wanted - state.users)
        extra = sorted(state.users - wanted)
        if missing:
            self._sacctmgr("add", "user", f"name={','.join(missing)}", f"account={name}",
                           f"cluster={self.cluster}")
        for user in extra:
            self._run(["scancel", f"--account={name}", f"--user={user}"],
                      ok_markers=("Invalid user",))
        if extra:
            self._run(["sacctmgr", "-i", "delete", "user", f"name={','.join(extra)}",
                       f"account={name}", f"cluster={self.cluster}"],
                      ok_markers=("Nothing deleted",))
        return AccountState(name=name, users=frozenset(wanted), gpu_minutes=state.gpu_minutes,
                            blocked=state.blocked, changed=bool(missing or extra))

    @staticmethod
    def _check_minutes(gpu_minutes: int) -> None:
        if not isinstance(gpu_minutes, int) or isinstance(gpu_minutes, bool) or gpu_minutes < 0:
            raise BackendError(f"invalid GPU-minute cap {gpu_minutes!r}", permanent=True)

    def set_cap(self, *, name: str, gpu_minutes: int) -> None:
        """Set GrpTRESMins=gres/gpu=<minutes> on the account. Idempotent."""
        check_name(name, "account")
        self._check_minutes(gpu_minutes)
        self._sacctmgr("modify", "account", "where", f"name={name}", f"cluster={self.cluster}",
                       "set", f"GrpTRESMins=gres/gpu={gpu_minutes}")

    def block_account(self, *, name: str) -> None:
        """Refuse submissions (GrpSubmitJobs=0) and cancel every job of the account. Idempotent."""
        check_name(name, "account")
        self._sacctmgr("modify", "account", "where", f"name={name}", f"cluster={self.cluster}",
                       "set", "GrpSubmitJobs=0")
        self._run(["scancel", f"--account={name}"])

    def unblock_account(self, *, name: str) -> None:
        """Lift GrpSubmitJobs (back to unlimited). Idempotent."""
        check_name(name, "account")
        self._sacctmgr("modify", "account", "where", f"name={name}", f"cluster={self.cluster}",
                       "set", "GrpSubmitJobs=-1")

    # -- jobs ---------------------------------------------------------------------------------

    def _sbatch_args(self, spec: JobSpec, workdir: str) -> tuple[list[str], str]:
        array = spec.array_size or spec.array_tasks
        output = f"{workdir}/slurm-%A_%a.out" if array else f"{workdir}/slurm-%j.out"
        args = [
            f"--job-name={spec.token}", f"--account={spec.account}",
            f"--time={spec.time_limit_minutes}", f"--chdir={workdir}", f"--output={output}",
            "--open-mode=append",
        ]
        # The checkpoint warning comes at most half-way: a lead as long as the limit (the 120 s
        # default on a 2-minute job) had Slurm send USR1 at its first time-limit check, killing
        # a batch script that does not catch it (seen as FAILED, exit 0:10).
        lead = min(spec.checkpoint_signal_seconds, spec.time_limit_minutes * 60 // 2)
        if lead > 0:
            args.append(f"--signal=B:USR1@{lead}")
        if spec.gpus:
            args.append(f"--gres=gpu:{spec.gpus}")
        partition = spec.partition or self.partition
        if partition:
            args.append(f"--partition={check_name(partition, 'partition')}")
        if spec.array_size:
            limit = f"%{spec.array_concurrency}" if spec.array_concurrency else ""
            args.append(f"--array=0-{spec.array_size - 1}{limit}")
        elif spec.array_tasks:
            args.append(f"--array={','.join(str(t) for t in spec.array_tasks)}")
        if spec.comment:
            args.append(f"--comment={spec.comment}")
        return [*args, f"{workdir}/{spec.script}", *spec.args], output

    def _validate(self, spec: JobSpec) -> None:
        if not TOKEN_RE.match(spec.token):
            raise BackendError(f"invalid job token {spec.token!r}", permanent=True)
        check_name(spec.account, "account")
        script = PurePosixPath(spec.script)
        staged = not spec.workdir and (spec.bundle_dir / spec.script).is_file()
        if script.is_absolute() or ".." in script.parts or not (staged or spec.workdir):
            raise BackendError(f"job script {spec.script!r} is not a file in the bundle", permanent=True)
        if spec.workdir and (not _WORKDIR_RE.match(spec.workdir) or ".." in spec.workdir.split("/")):
            raise BackendError(f"invalid work folder {spec.workdir!r}", permanent=True)
        if any(not isinstance(t, int) or isinstance(t, bool) or t < 0 for t in spec.array_tasks):
            raise BackendError(f"invalid array tasks {spec.array_tasks!r}", permanent=True)
        for value, what in ((spec.gpus, "gpus"), (spec.time_limit_minutes, "time limit"),
                            (spec.array_size, "array size"), (spec.array_concurrency, "array concurrency"),
                            (spec.checkpoint_signal_seconds, "checkpoint signal")):
            if not isinstance(value, int) or value < 0:
                raise BackendError(f"invalid {what} {value!r}", permanent=True)

    def submit(self, spec: JobSpec) -> SubmitResult:
        """Stage `spec.bundle_dir` and sbatch it, at most once per token.

        Safe to call again after any failure, from any worker: the token is looked up on the
        cluster before anything is uploaded (a job that carries it is returned as it is,
        `already_submitted=True`, its folder untouched), the bundle goes to a fresh folder of
        this attempt's own (`<jobs_dir>/<token>-<nonce>`, never a running job's), and the remote
        side looks the token up again under a per-token lock before submitting.
        """
        self._validate(spec)
        if not spec.workdir:
            found = self._find(spec.token)
            if found is not None:
                return self._result(spec, *found, already=True)
        # A resumed job runs again in its first submission's folder (its checkpoints are there).
        staged = "" if spec.workdir else self.ssh.upload_dir(
            spec.bundle_dir, f"{self.jobs_dir}/{spec.token}-{secrets.token_hex(4)}")
        workdir = spec.workdir or staged
        lock = f"{workdir}/.submit.lock" if spec.workdir else f"{self.jobs_dir}/.{spec.token}.lock"
        sbatch_args, _ = self._sbatch_args(spec, workdir)
        result = self._run(["bash", "-c", _SUBMIT_SCRIPT, "portal-submit", spec.token, lock,
                            staged, *sbatch_args])
        kind, _, found_line = result.stdout.strip().rpartition("\n")[2].partition(" ")
        job_id, _, existing_dir = found_line.partition("|")
        if kind not in ("new", "existing") or not JOB_ID_RE.match(job_id):
            raise BackendError(f"unexpected sbatch reply: {result.stdout[:200]!r}", permanent=True)
        return self._result(spec, job_id, existing_dir or workdir, already=kind == "existing")

    def _result(self, spec: JobSpec, job_id: str, workdir: str, *, already: bool) -> SubmitResult:
        _, output = self._sbatch_args(spec, workdir)
        return SubmitResult(job_id=job_id, token=spec.token, workdir=workdir,
                            output_pattern=output, already_submitted=already)

    def _find(self, token: str) -> tuple[str, str] | None:
        """(job id, work folder) of the job submitted with `token`, from squeue or sacct."""
        live = self._run(["squeue", "-h", "-a", "-t", "all", f"--name={token}", "-o", "%F|%Z"]).stdout
        past = self._run(["sacct", "-n", "-X", "-a", "-P", f"--name={token}", "-S", "now-60days",
                          "-o", "JobID,WorkDir"]).stdout
        for line in (live + "\n" + past).splitlines():
            ref, _, workdir = line.strip().partition("|")
            job = re.split(r"[_.]", ref, maxsplit=1)[0]
            if job.isdigit():
                return job, workdir
        return None

    def find_job_by_token(self, token: str) -> str | None:
        """The id of the job submitted with `token` (pending, running or finished), or None."""
        if not TOKEN_RE.match(token):
            raise BackendError(f"invalid job token {token!r}", permanent=True)
        found = self._find(token)
        return found[0] if found else None

    def status(self, job_ids: list[str]) -> dict[str, JobStatus]:
        """Each job's state: squeue for live jobs, sacct once final; arrays carry `tasks`.

        A job neither command knows (yet, or any more) is JobState.UNKNOWN.
        """
        ids = [self._check_job_id(j) for j in job_ids]
        if not ids:
            return {}
        joined = ",".join(ids)
        # squeue exits 1 with "Invalid job id" when none of the ids is still in memory.
        live = self._run(["squeue", "-h", "-a", "--array", "-t", "all", f"--jobs={joined}",
                          "-o", slurm_parse.SQUEUE_STATUS_FORMAT], ok_markers=("Invalid job id",))
        accounted = self._run(["sacct", "-n", "-P", "-X", "-a", f"--jobs={joined}",
                               "-o", ",".join(slurm_parse.SACCT_STATUS_FIELDS)]).stdout
        records = slurm_parse.merge_status(
            slurm_parse.parse_squeue_status(live.stdout if live.ok() else ""),
            slurm_parse.parse_sacct_status(accounted))
        return {j: slurm_parse.aggregate(j, records) for j in ids}

    def cancel(self, job_id: str) -> None:
        """scancel the job (every task of an array). Idempotent."""
        self._run(["scancel", self._check_job_id(job_id)],
                  ok_markers=("Invalid job id", "already completing or completed"))

    def usage_since(self, *, account: str, since: dt.datetime, steps: bool = False,
                    skip_names: str = "") -> list[UsageRow]:
        """sacct rows of the account's jobs active since `since` (allocation rows only unless
        `steps`); running jobs appear with their elapsed time so far. Jobs whose name starts
        with `skip_names` are left out, with their steps (notebook sessions: charged apart)."""
        check_name(account, "account")
        args = ["sacct", "-n", "-P", "-a", f"--accounts={account}", f"--clusters={self.cluster}",
                f"--starttime={since.strftime('%Y-%m-%dT%H:%M:%S')}", "--endtime=now",
                "-o", ",".join(slurm_parse.SACCT_USAGE_FIELDS)]
        if not steps:
            args.insert(1, "-X")
        text = self._run(args).stdout
        if skip_names:
            text = slurm_parse.without_jobs_named(text, skip_names)
        return slurm_parse.parse_sacct_usage(text)

    def jobs_named(self, *, account: str, prefix: str, since: dt.datetime) -> list[NamedJob]:
        """sacct allocation rows of the account's jobs since `since` whose name starts with
        `prefix` (a notebook session's jobs), pending ones included, with Slurm's reason."""
        check_name(account, "account")
        if not _PREFIX_RE.match(prefix):
            raise BackendError(f"invalid job name prefix {prefix!r}", permanent=True)
        out = self._run(["sacct", "-n", "-P", "-X", "-a", f"--accounts={account}",
                         f"--clusters={self.cluster}",
                         f"--starttime={since.strftime('%Y-%m-%dT%H:%M:%S')}", "--endtime=now",
                         "-o", ",".join(slurm_parse.SACCT_NAMED_FIELDS)]).stdout
        return [job for job in slurm_parse.parse_sacct_named(out) if job.name.startswith(prefix)]

    @staticmethod
    def _check_job_id(job_id: str) -> str:
        if not isinstance(job_id, str) or not JOB_ID_RE.match(job_id):
            raise BackendError(f"invalid job id {job_id!r}", permanent=True)
        return job_id

    # -- files and nodes ----------------------------------------------------------------------

    def read_file(self, path: str, *, max_bytes: int = 65536) -> bytes:
        """The last `max_bytes` of a file on the login node (relative paths: from home)."""
        return self.ssh.read_file(path, max_bytes=max_bytes)

    def output_path(self, result: SubmitResult, task: int | None = None) -> str:
        """Where the job's (or array task's) stdout goes."""
        path = result.output_pattern.replace("%j", result.job_id).replace("%A", result.job_id)
        return path.replace("%a", str(task if task is not None else 0))
