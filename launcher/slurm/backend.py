"""The `slurm` registry entry: accounts, jobs and usage on a Slurm facility over SSH, and the
facility's connection (its settings with defaults, one cached SlurmClient per facility).

Operations do network I/O and database reads only: they return what they found (the seam's
facts of launcher/backends/contract.py: the account and its members, unsaved usage records, job
facts) and never write the portal's database (launcher/provisioning.py records a provision's
members, launcher/services/accounts.py a sync's, launcher/services/ move the jobs). usage.py and notebooks.py are handed the
client or settings from here, so this module is the one place that holds connections.

Slurm settings (`backend_settings`; all but host/user/key_path/host_key have defaults):
  host, port (22), user, key_path, host_key (a known_hosts line, bare key or file path;
  `host_key_path` is accepted as an alias), cluster, partition, jobs_dir ("portal-jobs"),
  python ("python3": the interpreter on the compute side), python_path (extra PYTHONPATH on
  the compute side, e.g. a shared virtualenv's site-packages), connect_timeout, retries,
  storage_root (the project storage root for datasets; launcher/services/launch.py); for notebook
  sessions (docs/notebooks-slurm.md): notebook_python (default: python), notebook_env (extra
  environment), notebook_readonly_datasets (default true: read-only bind mounts).

Connections are cached per process and facility (one SSH connection reused by every task of a
worker) and rebuilt when the settings change.

Whose identity: `user` is the portal's service account (a Slurm Operator: accounts, caps,
scancel). A job, a sweep and a notebook run as the cluster login of the member who launched it
(`ProjectMembership.cluster_username` of the job's `created_by` in the allocation's project),
submitted with `sudo -n -u <login> sbatch`, and its files are read as that login; a member
with no login, or whose login sudo refuses, gets a refusal that says so, never a run as the
service account (docs/security.md, docs/notebooks-slurm.md)."""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from allocations.models import Allocation, Facility, ProjectMembership, UsageRecord

from .. import bundles
from ..backends.contract import (
    AccountSynced,
    BackendError,
    BaseBackend,
    Capability,
    Fetched,
    MemberSync,
    NotebookUsage,
    Observation,
    PathRefused,
    Provisioned,
    StartEstimate,
    Submission,
    check_cluster_username,
    check_name,
    confined,
    project_folder,
)
from ..models import Job
from . import notebooks
from .client import SlurmClient
from .estimate import estimate_from
from .records import JobSpec, JobState, JobStatus
from .ssh import SSHConnection, SSHTarget
from .usage import SOURCE, usage_read

if TYPE_CHECKING:
    from launcher.notebooks.models import NotebookSession

TRAINER_EXIT_CHECKPOINTED = 75
_cache: dict[int, tuple[str, SlurmClient]] = {}
_lock = threading.Lock()
_STATE = {
    JobState.PENDING: Job.State.PENDING,
    JobState.RUNNING: Job.State.RUNNING,
    JobState.SUCCEEDED: Job.State.SUCCEEDED,
    JobState.FAILED: Job.State.FAILED,
    JobState.CANCELLED: Job.State.CANCELLED,
    JobState.TIMEOUT: Job.State.TIMEOUT,
    JobState.PREEMPTED: Job.State.PREEMPTED,
}


def slurm_settings(facility: Facility) -> dict[str, Any]:
    """The facility's Slurm settings with defaults; a permanent BackendError names what is missing."""
    raw = dict(facility.backend_settings or {})
    if "host_key" not in raw and "host_key_path" in raw:
        raw["host_key"] = raw["host_key_path"]
    missing = [k for k in ("host", "user", "key_path", "host_key", "cluster") if not raw.get(k)]
    if missing:
        raise BackendError(
            f"facility {facility.slug} has no {', '.join(missing)} in its backend settings",
            permanent=True,
        )
    raw.setdefault("port", 22)
    raw.setdefault("jobs_dir", "portal-jobs")
    raw.setdefault("python", "python3")
    raw.setdefault("python_path", "")
    return raw


def slurm_client(facility: Facility) -> SlurmClient:
    """The (cached) SlurmClient for a facility."""
    conf = slurm_settings(facility)
    key = repr(sorted(conf.items()))
    with _lock:
        cached = _cache.get(facility.pk)
        if cached and cached[0] == key:
            return cached[1]
        if cached:
            cached[1].ssh.close()
        target = SSHTarget(
            host=conf["host"],
            port=int(conf["port"]),
            user=conf["user"],
            key_path=Path(conf["key_path"]),
            host_key=conf["host_key"],
            connect_timeout=float(conf.get("connect_timeout", 10)),
            retries=int(conf.get("retries", 3)),
            backoff_seconds=float(conf.get("backoff_seconds", 0.5)),
        )
        client = SlurmClient(
            SSHConnection(target),
            cluster=conf["cluster"],
            partition=conf.get("partition") or None,
            jobs_dir=conf["jobs_dir"],
        )
        _cache[facility.pk] = (key, client)
        return client


def forget(facility_id: int) -> None:
    """Drop a cached connection (tests that stop sshd, settings edited by an admin)."""
    with _lock:
        cached = _cache.pop(facility_id, None)
    if cached:
        cached[1].ssh.close()


def _scheduler_ref(job: Job) -> str:
    """The Slurm id of the job or of its array task."""
    if job.array_index is None:
        return job.scheduler_id
    return f"{job.scheduler_id}_{job.array_index}"


def gpu_minutes(allocation: Allocation) -> int:
    """The cap: granted GPU-hours x 60, as whole minutes."""
    return int(allocation.gpu_hours * 60)


def account_name(allocation: Allocation) -> str:
    return allocation.account_name or allocation.default_account_name()


def member_logins(allocation: Allocation) -> MemberSync:
    """The project's members' cluster logins a scheduler accepts, and {membership id: why not}
    for the others. One member's bad login never stops the account's other work: it is left
    out (the caller records it on the membership; the staff home shows it until it is fixed).
    The facility's service account is never a member's login (members' work never runs as
    it). Database reads only."""
    service = str((allocation.facility.backend_settings or {}).get("user") or "")
    rows = (
        ProjectMembership.objects.filter(project_id=allocation.project_id)
        .exclude(cluster_username="")
        .values_list("pk", "cluster_username")
    )
    logins: set[str] = set()
    refused: dict[int, str] = {}
    for pk, login in rows:
        try:
            if login == service:
                raise BackendError(
                    f"cluster login {login!r} is the portal's service account on "
                    "this facility; set the member's own login",
                    permanent=True,
                )
            logins.add(check_cluster_username(login))
        except BackendError as error:
            refused[pk] = error.message
    return MemberSync(logins=tuple(sorted(logins)), refused=refused)


def job_login(job: Job) -> str:
    """The cluster login the job runs (and its files are read) as: its launcher's login in the
    allocation's project. A permanent BackendError when there is none: the job is refused,
    never run as the service account."""
    return member_login(job.allocation, job.created_by_id)


def member_login(allocation: Allocation, user_id: int) -> str:
    """The cluster login of user `user_id` in the allocation's project (what their jobs run
    as); a permanent BackendError when there is none."""
    login = (
        ProjectMembership.objects.filter(project_id=allocation.project_id, user_id=user_id)
        .values_list("cluster_username", flat=True)
        .first()
    )
    if not login:
        raise BackendError(
            "the member who launched it has no cluster login in this project: a PI or manager "
            "sets it on the project's members page (jobs run as the member's own login, never "
            "as the portal's service account)",
            permanent=True,
        )
    return login


def _signal_seconds(wall_time_minutes: int) -> int:
    # Warn the trainer 2 minutes before the limit, or a quarter of a short limit.
    return max(10, min(120, wall_time_minutes * 60 // 4))


class SlurmBackend(BaseBackend):
    """Slurm over SSH: accounts with GPU-minute caps, jobs and arrays, sacct usage. The portal
    resubmits preempted jobs itself (`resume`)."""

    name = "slurm"
    label = "Slurm over SSH"
    usage_source = SOURCE
    capabilities = frozenset(
        {
            Capability.PROVISION,
            Capability.ACCOUNT_SYNC,
            Capability.SUBMIT,
            Capability.RESUME,
            Capability.OBSERVE,
            Capability.FETCH,
            Capability.CANCEL,
            Capability.USAGE,
            Capability.DATA_PATHS,
            Capability.NOTEBOOK,
            Capability.START_ESTIMATE,
        }
    )

    def start_estimate(
        self, *, allocation: Allocation, user_id: int, gpus: int, wall_time_minutes: int
    ) -> StartEstimate:
        """Slurm's own estimate for the job, asked as the member who would launch it
        (`sbatch --test-only`: nothing is submitted), with the partition's backlog
        (launcher/slurm/starts.py). A permanent BackendError when the member has no login
        or the scheduler refuses the job as asked."""
        report = slurm_client(allocation.facility).start_estimate(
            user=member_login(allocation, user_id),
            account=account_name(allocation),
            gpus=gpus,
            time_limit_minutes=wall_time_minutes,
        )
        return estimate_from(report)

    def resolve_data_path(self, *, facility: Facility, project_code: str, location: str) -> str:
        """Resolved where the files are: `realpath -e` over SSH (an argument list) follows
        every symlink; the result must lie inside the project's folder (`storage_root` is on
        the cluster, relative to the account's home or absolute). PathRefused for no storage,
        a missing folder or an escape; a transient BackendError when the cluster is down."""
        root = project_folder(facility.backend_settings, project_code)
        result = slurm_client(facility).ssh.run(
            ["realpath", "-e", "--", root, f"{root}/{location}"]
        )
        lines = [line for line in result.stdout.splitlines() if line.strip()]
        if not lines:
            raise PathRefused("the project has no folder in this facility's storage yet")
        if result.rc != 0 or len(lines) != 2:
            raise PathRefused("no such folder in the project's storage on the cluster")
        real_root, real = lines
        if not confined(real_root, real):
            raise PathRefused("it resolves to a place outside the project's folder (a symlink?)")
        return real

    def notebook_options(
        self, *, allocation: Allocation, session: NotebookSession
    ) -> dict[str, Any]:
        """What the hub's SlurmNotebookSpawner needs (launcher/slurm/notebooks.py): the SSH
        facts, account, partition, the owner's cluster login, the session's folders under the
        project's storage and the project's datasets resolved and confined on the cluster.
        The session runs as the owner's login: a session whose owner has none, or whose login
        the cluster's sudo refuses, is refused here with that reason (checked over SSH)."""
        code = allocation.project.code

        def resolve(location: str) -> str:
            return self.resolve_data_path(
                facility=allocation.facility, project_code=code, location=location
            )

        options = notebooks.notebook_options(
            allocation, session, resolve, slurm_settings(allocation.facility)
        )
        slurm_client(allocation.facility).check_member(options["login"])
        return options

    def notebook_usage(self, *, session: NotebookSession) -> NotebookUsage | None:
        """sacct's record of the session's job: elapsed x allocated GPUs, the job id, why it
        ended (or what it waits for)."""
        return notebooks.notebook_usage(session, slurm_client(session.allocation.facility))

    def is_configured(self, facility: Facility) -> bool:
        """Host, user, key, pinned host key and cluster name are all set."""
        try:
            slurm_settings(facility)
        except BackendError:
            return False
        return True

    def provision(self, *, allocation: Allocation) -> Provisioned:
        """Create (or complete) the allocation's Slurm account with its members and cap, and
        return its name with the members it holds. A member whose login the scheduler cannot
        take is left out (member_logins, in `members.refused` for the caller to record), never
        a reason to fail the account. Re-running after success changes nothing on the cluster
        (ensure_account only fixes what differs)."""
        name = check_name(account_name(allocation), "account")
        members = member_logins(allocation)
        slurm_client(allocation.facility).ensure_account(
            name=name, users=list(members.logins), gpu_minutes=gpu_minutes(allocation)
        )
        return Provisioned(account=name, members=members)

    def sync_account(self, *, allocation: Allocation) -> AccountSynced:
        """Bring the account in line with the allocation's state, grant and members: blocked
        (and its jobs cancelled) while suspended, exhausted, expired or closed; unblocked and
        capped while active; then the user associations exactly the project's members' valid
        cluster logins (plus the service user) while the allocation is live. The state comes
        first and a member's bad login is left out (member_logins), so neither can stop a
        suspension, a block, a new cap or a removal. Returns what was done and, while live, the
        members synced (the caller records who was left out). Idempotent; errors propagate
        (the task retries)."""
        if not allocation.account_name:
            return AccountSynced(done="nothing to do")
        client = slurm_client(allocation.facility)
        done = "nothing to do"
        if allocation.status in Allocation.BLOCKED:
            client.block_account(name=allocation.account_name)
            done = "blocked"
        elif allocation.status == Allocation.Status.ACTIVE:
            client.set_cap(name=allocation.account_name, gpu_minutes=gpu_minutes(allocation))
            client.unblock_account(name=allocation.account_name)
            done = "active"
        if allocation.status not in Allocation.LIVE:
            return AccountSynced(done=done)
        members = member_logins(allocation)
        client.sync_users(name=allocation.account_name, users=list(members.logins))
        return AccountSynced(done=done, members=members)

    def usage(self, *, allocation: Allocation) -> list[UsageRecord]:
        """sacct records of the account since the last ingestion, as unsaved UsageRecords."""
        return usage_read(allocation=allocation, client=slurm_client(allocation.facility))

    def submit(self, *, facility: Facility, jobs: Sequence[Job], token: str) -> Submission:
        """Stage one bundle for these jobs and sbatch it once (an array for a sweep's cells).
        Idempotent per token (the backend looks the token up under a lock first)."""
        conf = slurm_settings(facility)
        first = jobs[0]
        sweep = first.sweep if first.sweep_id else None
        cells = [bundles.single_cell(j.params) for j in jobs]
        # A staged sweep's batch runs as the array tasks of its cells' own indices.
        staged = sweep is not None and sweep.staged
        tasks = tuple(j.array_index or 0 for j in jobs) if staged else ()
        folder = bundles.write_bundle(
            cells=cells, params=first.params, gpus=first.gpus, indices=tasks if staged else None
        )
        try:
            spec = JobSpec(
                token=token,
                account=first.allocation.account_name,
                bundle_dir=folder,
                script="job.sh",
                args=(str(conf["python"]), str(conf["python_path"])),
                gpus=first.gpus,
                time_limit_minutes=first.wall_time_minutes,
                checkpoint_signal_seconds=_signal_seconds(first.wall_time_minutes),
                array_size=len(jobs) if sweep and not staged else 0,
                array_concurrency=sweep.concurrency if sweep and not staged else 0,
                array_tasks=tasks,
                comment=f"portal sweep {sweep.pk}" if sweep else f"portal job {first.pk}",
            )
            # As the member who launched it; its folder (checkpoints, logs, metrics) is shared
            # with that member alone (docs/security.md).
            result = slurm_client(facility).submit(spec, user=job_login(first))
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        output = result.output_pattern.replace("%j", result.job_id).replace("%A", result.job_id)
        return Submission(
            scheduler_id=result.job_id,
            workdir=result.workdir,
            output_path=output.replace("%a", "{index}"),
            already_submitted=result.already_submitted,
        )

    def resume(self, *, facility: Facility, job: Job, token: str) -> Submission:
        """Submit `job` again under `token` in its first submission's folder, where the trainer
        finds its checkpoint (`--resume` is in every bundle's arguments); a sweep cell runs as
        the same array task. Idempotent per token, like `submit`."""
        conf = slurm_settings(facility)
        spec = JobSpec(
            token=token,
            account=job.allocation.account_name,
            bundle_dir=Path("."),
            workdir=job.workdir,
            script="job.sh",
            args=(str(conf["python"]), str(conf["python_path"])),
            gpus=job.gpus,
            time_limit_minutes=job.wall_time_minutes,
            checkpoint_signal_seconds=_signal_seconds(job.wall_time_minutes),
            array_tasks=(job.array_index,) if job.array_index is not None else (),
            comment=f"portal job {job.pk} resumed",
        )
        result = slurm_client(facility).submit(spec, user=job_login(job))
        output = result.output_pattern.replace("%j", result.job_id).replace("%A", result.job_id)
        return Submission(
            scheduler_id=result.job_id,
            workdir=result.workdir,
            output_path=output.replace("%a", str(job.array_index or 0)),
            already_submitted=result.already_submitted,
        )

    def observe(self, *, facility: Facility, jobs: Sequence[Job]) -> dict[int, Observation]:
        """squeue/sacct states of these jobs (array cells from their array's tasks)."""
        ids = sorted({j.scheduler_id for j in jobs if j.scheduler_id})
        statuses = slurm_client(facility).status(ids) if ids else {}
        seen: dict[int, Observation] = {}
        for job in jobs:
            status = statuses.get(job.scheduler_id)
            if status is None:
                continue
            if job.array_index is not None:
                status = status.tasks.get(_scheduler_ref(job)) or (
                    status if status.state is JobState.PENDING else None
                )
            if status is None or status.state is JobState.UNKNOWN:
                continue
            if status.state is JobState.FAILED and status.exit_code is None:
                continue  # squeue saw it end before sacct has its exit code: next poll
            seen[job.pk] = _observation(status)
        return seen

    def fetch(self, *, facility: Facility, job: Job) -> Fetched:
        """progress.json, the log tail and (once written) metrics.json of the job's cell, read
        as the member the job runs as (one round trip): the job can write anything there,
        symlinks included, and must never make the portal read what its member cannot."""
        out = f"{job.workdir}/{bundles.out_dir(job.array_index or 0)}"
        files = [(f"{out}/progress.json", 1 << 20), (f"{out}/metrics.json", 1 << 20)]
        if job.output_path:
            files.append((job.output_path, 60 * 512))
        found = slurm_client(facility).read_as(job_login(job), files)
        log = found[2] if len(found) > 2 else None
        return Fetched(
            progress=_json(found[0]),
            metrics=_json(found[1]),
            log_tail=None
            if log is None
            else "\n".join(log.decode("utf-8", "replace").splitlines()[-60:]),
        )

    def cancel(self, *, facility: Facility, jobs: Sequence[Job]) -> None:
        """scancel each job (or array task); finished ones are no error."""
        backend = slurm_client(facility)
        for ref in sorted({_scheduler_ref(j) for j in jobs if j.scheduler_id}):
            backend.cancel(ref)


def _observation(status: JobStatus) -> Observation:
    state = _STATE[status.state]
    reason = status.reason if status.state is JobState.PENDING else ""
    if state == Job.State.FAILED and status.exit_code == TRAINER_EXIT_CHECKPOINTED:
        # The trainer caught --signal (or a preemption's SIGTERM), checkpointed and exited 75:
        # the monitor resumes it (launcher/services/resume.py).
        state, reason = Job.State.PREEMPTED, "checkpointed on a signal before its time limit"
    elif state == Job.State.PREEMPTED:
        reason = "preempted or its node failed"
    elif state == Job.State.FAILED and status.exit_code is not None:
        reason = f"exit code {status.exit_code}"
    return Observation(
        state=state,
        reason=reason,
        exit_code=status.exit_code,
        elapsed_seconds=status.elapsed_seconds,
    )


def _json(data: bytes | None) -> dict | None:
    if data is None:
        return None
    try:
        value = json.loads(data)
    except ValueError:
        return None  # being replaced right now: the next poll reads it
    return value if isinstance(value, dict) else None
