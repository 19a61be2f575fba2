"""Slurm jobs: sbatch (as the member, at most once per token), squeue and sacct states,
scancel, sacct usage rows. Values reach the login node as argument lists, never spliced into
shell text (commands.py runs them and classifies failures)."""

from __future__ import annotations

import datetime as dt
import re
import secrets
from pathlib import PurePosixPath

from launcher.backends.errors import TOKEN_RE, BackendError, check_name

from . import parse as slurm_parse
from .commands import JOB_ID_RE, SlurmCommands
from .parse import NamedJob
from .records import JobSpec, JobStatus, SubmitResult, UsageRow

_PREFIX_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$")  # the start of a job name
# A folder the portal staged earlier (what `submit` returned as `workdir`).
_WORKDIR_RE = re.compile(r"^[A-Za-z0-9_./-]{1,300}$")

# Runs on the login node as the service account. Under a per-token lock it looks the token up
# (squeue keeps finished jobs for MinJobAge, sacct after that) and only submits if nothing
# carries it, so a re-sent submission after a lost reply never makes a second job. `staged` is
# this attempt's own fresh folder (never a submitted job's): removed when a job with the token
# exists or the submission fails. Before sbatch it checks that sudo lets it submit as `user`
# (exit 77 with sudo's words if not: nothing is ever submitted as the service account), makes
# the jobs folder traversable (not listable) and shares the job's folder with `user` alone
# (mode 700 + ACL; exit 78 if the file system refuses ACLs). Prints `new ID` or
# `existing ID|WORKDIR`. Values arrive as positional arguments ("$@"), never spliced into this
# text.
_SUBMIT_SCRIPT = r"""
set -u
token=$1; lock=$2; staged=$3; user=$4; workdir=$5; jobs=$6; shift 6
exec 9>>"$lock"
flock -w 60 9 || { echo "lock busy: $lock" >&2; exit 75; }
q=$(squeue -h -a -t all --name="$token" -o '%F|%Z') || exit 75
a=$(sacct -n -X -a -P --name="$token" -S now-60days -o JobID,WorkDir) || exit 75
found=$(printf '%s\n%s\n' "$q" "$a" | sed -e 's/^\([0-9]*\)[_.][^|]*|/\1|/' | grep -m1 '^[0-9][0-9]*|')
drop() { if [ -n "$staged" ]; then rm -rf -- "$staged"; fi; }
if [ -n "$found" ]; then
  drop; echo "existing $found"; exit 0
fi
sbatch=$(command -v sbatch) || { echo "sbatch is not on the login node's PATH" >&2; drop; exit 1; }
if ! why=$(sudo -n -l -u "$user" "$sbatch" 2>&1 >/dev/null); then
  echo "$why" >&2; drop; exit 77
fi
me=$(id -un)
chmod 0711 -- "$jobs" && chmod 0700 -- "$workdir" || { drop; exit 1; }
# Folders the member's job makes in the staged bundle (__pycache__) stay removable by the
# service account: default entries for both on every staged folder.
if ! why=$( { if [ -n "$staged" ]; then setfacl -R -m "u:$user:rwX" -- "$staged" &&
                find "$staged" -type d -exec setfacl -m "d:u:$user:rwx,d:u:$me:rwx" -- {} +; fi &&
              setfacl -m "u:$user:rwx,d:u:$user:rwx,d:u:$me:rwx,d:g::-,d:o::-" -- "$workdir"; } 2>&1); then
  echo "$why" >&2; drop; exit 78
fi
out=$(sudo -n -u "$user" "$sbatch" --parsable "$@") || { rc=$?; drop; exit $rc; }
echo "new ${out%%;*}"
"""


class SlurmJobs(SlurmCommands):
    """Jobs and arrays on a Slurm cluster: submit, status, cancel, accounting."""

    def _sbatch_args(self, spec: JobSpec, workdir: str) -> tuple[list[str], str]:
        array = spec.array_size or spec.array_tasks
        output = f"{workdir}/slurm-%A_%a.out" if array else f"{workdir}/slurm-%j.out"
        args = [
            f"--job-name={spec.token}",
            f"--account={spec.account}",
            f"--time={spec.time_limit_minutes}",
            f"--chdir={workdir}",
            f"--output={output}",
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
            raise BackendError(
                f"job script {spec.script!r} is not a file in the bundle", permanent=True
            )
        if spec.workdir and (
            not _WORKDIR_RE.match(spec.workdir) or ".." in spec.workdir.split("/")
        ):
            raise BackendError(f"invalid work folder {spec.workdir!r}", permanent=True)
        if any(not isinstance(t, int) or isinstance(t, bool) or t < 0 for t in spec.array_tasks):
            raise BackendError(f"invalid array tasks {spec.array_tasks!r}", permanent=True)
        for value, what in (
            (spec.gpus, "gpus"),
            (spec.time_limit_minutes, "time limit"),
            (spec.array_size, "array size"),
            (spec.array_concurrency, "array concurrency"),
            (spec.checkpoint_signal_seconds, "checkpoint signal"),
        ):
            if not isinstance(value, int) or value < 0:
                raise BackendError(f"invalid {what} {value!r}", permanent=True)

    def submit(self, spec: JobSpec, *, user: str) -> SubmitResult:
        """Stage `spec.bundle_dir` and sbatch it as the member `user` (their cluster login), at
        most once per token.

        The job runs as `user` (`sudo -n -u user sbatch`), never as the service account: when
        sudo refuses, this raises a permanent BackendError that says so and nothing is
        submitted. The job's folder is shared with `user` alone (ACL). Safe to call again after
        any failure, from any worker: the token is looked up on the cluster before anything is
        uploaded (a job that carries it is returned as it is, `already_submitted=True`, its
        folder untouched), the bundle goes to a fresh folder of this attempt's own
        (`<jobs_dir>/<token>-<nonce>`, never a running job's), and the remote side looks the
        token up again under a per-token lock before submitting.
        """
        login = self.member(user)
        self._validate(spec)
        if not spec.workdir:
            found = self._find(spec.token)
            if found is not None:
                return self._result(spec, *found, already=True)
        # A resumed job runs again in its first submission's folder (its checkpoints are there).
        staged = (
            ""
            if spec.workdir
            else self.ssh.upload_dir(
                spec.bundle_dir, f"{self.jobs_dir}/{spec.token}-{secrets.token_hex(4)}"
            )
        )
        workdir = spec.workdir or staged
        # The lock lives in the service account's own folder, never in the (member-writable)
        # job folder, where a planted symlink could redirect it.
        lock = f"{self.jobs_dir}/.{spec.token}.lock"
        sbatch_args, _ = self._sbatch_args(spec, workdir)
        args = [
            "bash",
            "-c",
            _SUBMIT_SCRIPT,
            "portal-submit",
            spec.token,
            lock,
            staged,
            login,
            workdir,
            self.jobs_dir,
            *sbatch_args,
        ]
        result = self.ssh.run(args)
        if result.rc == 77:
            raise self.refused(login, result.stderr)
        if result.rc == 78:
            raise BackendError(
                f"could not share the job's folder with {login} ({' '.join(result.stderr.split())[:200]}):"
                " the portal's jobs folder on the cluster must be on a file system with POSIX "
                "ACLs (docs/security.md)",
                permanent=True,
            )
        result = self._checked(args, result)
        kind, _, found_line = result.stdout.strip().rpartition("\n")[2].partition(" ")
        job_id, _, existing_dir = found_line.partition("|")
        if kind not in ("new", "existing") or not JOB_ID_RE.match(job_id):
            raise BackendError(f"unexpected sbatch reply: {result.stdout[:200]!r}", permanent=True)
        return self._result(spec, job_id, existing_dir or workdir, already=kind == "existing")

    def _result(self, spec: JobSpec, job_id: str, workdir: str, *, already: bool) -> SubmitResult:
        _, output = self._sbatch_args(spec, workdir)
        return SubmitResult(
            job_id=job_id,
            token=spec.token,
            workdir=workdir,
            output_pattern=output,
            already_submitted=already,
        )

    def _find(self, token: str) -> tuple[str, str] | None:
        """(job id, work folder) of the job submitted with `token`, from squeue or sacct."""
        live = self._run(
            ["squeue", "-h", "-a", "-t", "all", f"--name={token}", "-o", "%F|%Z"]
        ).stdout
        past = self._run(
            [
                "sacct",
                "-n",
                "-X",
                "-a",
                "-P",
                f"--name={token}",
                "-S",
                "now-60days",
                "-o",
                "JobID,WorkDir",
            ]
        ).stdout
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
        live = self._run(
            [
                "squeue",
                "-h",
                "-a",
                "--array",
                "-t",
                "all",
                f"--jobs={joined}",
                "-o",
                slurm_parse.SQUEUE_STATUS_FORMAT,
            ],
            ok_markers=("Invalid job id",),
        )
        accounted = self._run(
            [
                "sacct",
                "-n",
                "-P",
                "-X",
                "-a",
                f"--jobs={joined}",
                "-o",
                ",".join(slurm_parse.SACCT_STATUS_FIELDS),
            ]
        ).stdout
        records = slurm_parse.merge_status(
            slurm_parse.parse_squeue_status(live.stdout if live.ok() else ""),
            slurm_parse.parse_sacct_status(accounted),
        )
        return {j: slurm_parse.aggregate(j, records) for j in ids}

    def cancel(self, job_id: str) -> None:
        """scancel the job (every task of an array). Idempotent."""
        self._run(
            ["scancel", self._check_job_id(job_id)],
            ok_markers=("Invalid job id", "already completing or completed"),
        )

    def usage_since(
        self, *, account: str, since: dt.datetime, steps: bool = False, skip_names: str = ""
    ) -> list[UsageRow]:
        """sacct rows of the account's jobs active since `since` (allocation rows only unless
        `steps`); running jobs appear with their elapsed time so far. Jobs whose name starts
        with `skip_names` are left out, with their steps (notebook sessions: charged apart)."""
        check_name(account, "account")
        args = [
            "sacct",
            "-n",
            "-P",
            "-a",
            f"--accounts={account}",
            f"--clusters={self.cluster}",
            f"--starttime={since.strftime('%Y-%m-%dT%H:%M:%S')}",
            "--endtime=now",
            "-o",
            ",".join(slurm_parse.SACCT_USAGE_FIELDS),
        ]
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
        out = self._run(
            [
                "sacct",
                "-n",
                "-P",
                "-X",
                "-a",
                f"--accounts={account}",
                f"--clusters={self.cluster}",
                f"--starttime={since.strftime('%Y-%m-%dT%H:%M:%S')}",
                "--endtime=now",
                "-o",
                ",".join(slurm_parse.SACCT_NAMED_FIELDS),
            ]
        ).stdout
        return [job for job in slurm_parse.parse_sacct_named(out) if job.name.startswith(prefix)]

    def output_path(self, result: SubmitResult, task: int | None = None) -> str:
        """Where the job's (or array task's) stdout goes."""
        path = result.output_pattern.replace("%j", result.job_id).replace("%A", result.job_id)
        return path.replace("%a", str(task if task is not None else 0))
