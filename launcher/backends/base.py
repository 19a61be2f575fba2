"""What a compute backend does, in plain dataclasses (no Django).

A backend turns portal decisions into scheduler or cloud actions. Every method either succeeds
or raises `BackendError`, whose `permanent` flag tells the caller whether a retry can help
(classified once, where the client raises it). Methods documented as idempotent may be re-run
after any failure.
"""

from __future__ import annotations

import abc
import datetime as dt
import enum
import re
from dataclasses import dataclass, field
from pathlib import Path

from allocations.usernames import CLUSTER_USERNAME_HELP, is_cluster_username

# Names that reach a scheduler's own parser (sacctmgr reads `name=a,b` as two accounts, and a
# leading '-' as an option), so they are restricted beyond what shell quoting protects against.
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")
TOKEN_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{7,63}$")


class BackendError(Exception):
    """A backend operation failed.

    `permanent` is True when retrying cannot help (bad host key, refused by policy, invalid
    input) and False when the same call may succeed later unchanged (network down, timeout,
    daemon restarting). The client that raises it decides, once; callers never re-classify.
    """

    def __init__(self, message: str, *, permanent: bool) -> None:
        super().__init__(message)
        self.message = message
        self.permanent = permanent

    def __str__(self) -> str:
        kind = "permanent" if self.permanent else "transient"
        return f"{self.message} ({kind})"


class PathRefused(BackendError):
    """A data path that is missing or resolves outside the folder it must stay in (permanent:
    the launch is refused with the reason)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, permanent=True)


NO_STORAGE = "has no project storage configured (storage_root in its backend settings)"


def project_folder(backend_settings: dict | None, project_code: str, *, default_root: str = "") -> str:
    """`<storage_root>/<project code>`: a project's folder in a facility's project storage
    (`storage_root` in its backend settings, else `default_root`). Raises PathRefused when
    there is neither."""
    root = str((backend_settings or {}).get("storage_root") or default_root)
    if not root:
        raise PathRefused(NO_STORAGE)
    return f"{root.rstrip('/')}/{project_code}"


def confined(real_root: str, real: str) -> bool:
    """Whether the resolved path `real` is the resolved folder `real_root` or lies below it."""
    return real == real_root or real.startswith(real_root.rstrip("/") + "/")


def check_name(value: str, what: str) -> str:
    """Return `value` if it is a safe scheduler name, else raise a permanent BackendError."""
    if not isinstance(value, str) or not NAME_RE.match(value):
        raise BackendError(
            f"invalid {what} {value!r}: use 1-64 of a-z 0-9 _ . - starting with a letter or digit",
            permanent=True,
        )
    return value


def check_cluster_username(value: str) -> str:
    """Return `value` if it is a member login the scheduler may get (allocations/usernames.py,
    the one rule), else raise a permanent BackendError."""
    if not is_cluster_username(value):
        raise BackendError(f"invalid cluster username {value!r}: {CLUSTER_USERNAME_HELP}",
                           permanent=True)
    return value


class JobState(str, enum.Enum):
    """Scheduler-side job states, normalised across backends."""

    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    TIMEOUT = "timeout"
    PREEMPTED = "preempted"
    UNKNOWN = "unknown"  # not (or no longer) known to the scheduler

    @property
    def final(self) -> bool:
        return self in _FINAL_STATES


_FINAL_STATES = {JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED, JobState.TIMEOUT}


@dataclass(frozen=True)
class JobSpec:
    """What to run. `token` is unique per launch and makes submission idempotent.

    `bundle_dir` is a local folder staged to the compute side; `script` is a path inside it.
    `args` are passed to the script as separate, quoted arguments (user values go here).
    `array_size` > 0 makes a job array of tasks 0..array_size-1, at most `array_concurrency` at once.
    `workdir` set: the bundle is already staged there (a job resumed from its checkpoint in the
    same folder); nothing is uploaded and `bundle_dir` is not read. `array_tasks` submits only
    these tasks of the bundle's array (a resumed sweep cell keeps its SLURM_ARRAY_TASK_ID).
    """

    token: str
    account: str
    bundle_dir: Path
    script: str = "job.sh"
    args: tuple[str, ...] = ()
    gpus: int = 1
    time_limit_minutes: int = 60
    checkpoint_signal_seconds: int = 120
    array_size: int = 0
    array_concurrency: int = 0
    partition: str | None = None
    comment: str = ""
    workdir: str = ""
    array_tasks: tuple[int, ...] = ()


@dataclass(frozen=True)
class SubmitResult:
    """A submitted job: its scheduler id, where its output goes, and whether it already existed."""

    job_id: str
    token: str
    workdir: str
    output_pattern: str
    already_submitted: bool = False


@dataclass(frozen=True)
class JobStatus:
    """A job's (or array task's) state as the scheduler sees it now."""

    job_id: str
    state: JobState
    reason: str = ""
    exit_code: int | None = None
    elapsed_seconds: int = 0
    tasks: dict[str, "JobStatus"] = field(default_factory=dict)


@dataclass(frozen=True)
class UsageRow:
    """One accounting record. `job_id` includes an array task (`12_3`); `step` is '' for the
    whole allocation (the row to charge) or a step name ('batch', '0') when steps are asked for."""

    job_id: str
    step: str
    account: str
    state: str
    elapsed_seconds: int
    gpus: int
    start: dt.datetime | None
    end: dt.datetime | None

    @property
    def gpu_seconds(self) -> int:
        return self.elapsed_seconds * self.gpus

    @property
    def external_id(self) -> str:
        """Stable id for idempotent ingestion: job id plus step."""
        return f"{self.job_id}.{self.step}" if self.step else self.job_id


@dataclass(frozen=True)
class AccountState:
    """An account as the scheduler holds it after `ensure_account`."""

    name: str
    users: frozenset[str]
    gpu_minutes: int | None
    blocked: bool
    changed: bool = False


class SchedulerClient(abc.ABC):
    """What a batch scheduler's client offers (launcher.slurm.client.SlurmClient): plain
    arguments and dataclasses in, no Django state. Registry entries call it."""

    @abc.abstractmethod
    def ensure_account(self, *, name: str, users: list[str], gpu_minutes: int) -> AccountState:
        """Make the account exist with these users and this GPU-minute cap. Idempotent."""

    @abc.abstractmethod
    def block_account(self, *, name: str) -> None:
        """Refuse new submissions to the account and cancel its jobs. Idempotent."""

    @abc.abstractmethod
    def unblock_account(self, *, name: str) -> None:
        """Allow submissions again. Idempotent."""

    @abc.abstractmethod
    def set_cap(self, *, name: str, gpu_minutes: int) -> None:
        """Set the account's GPU-minute cap (a top-up raises it). Idempotent."""

    @abc.abstractmethod
    def submit(self, spec: JobSpec) -> SubmitResult:
        """Stage and submit a job; a second call with the same token returns the first job."""

    @abc.abstractmethod
    def find_job_by_token(self, token: str) -> str | None:
        """The job id submitted with this token, or None."""

    @abc.abstractmethod
    def status(self, job_ids: list[str]) -> dict[str, JobStatus]:
        """Current state of each job id (arrays aggregate their tasks)."""

    @abc.abstractmethod
    def cancel(self, job_id: str) -> None:
        """Cancel a job (all tasks of an array). Idempotent: a finished job is not an error."""

    @abc.abstractmethod
    def usage_since(self, *, account: str, since: dt.datetime) -> list[UsageRow]:
        """Accounting rows for jobs of the account active since `since`."""

    @abc.abstractmethod
    def read_file(self, path: str, *, max_bytes: int = 65536) -> bytes:
        """The last `max_bytes` of a file on the compute side (a log or progress file)."""

    def tail(self, path: str, *, lines: int = 50) -> str:
        """The last `lines` lines of a text file on the compute side."""
        data = self.read_file(path, max_bytes=max(4096, lines * 512))
        return "\n".join(data.decode("utf-8", "replace").splitlines()[-lines:])
