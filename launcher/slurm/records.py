"""What the Slurm client speaks, in plain records (no Django): a job to submit
(`JobSpec`), what sbatch made of it (`SubmitResult`), squeue/sacct states (`JobState`,
`JobStatus`), sacct accounting rows (`UsageRow`) and an account as slurmdbd holds it
(`AccountState`). The Slurm backend (backend.py) turns them into the seam's facts
(launcher/backends/contract.py); the hub's Slurm spawner uses them directly."""

from __future__ import annotations

import datetime as dt
import enum
from dataclasses import dataclass, field
from pathlib import Path


class JobState(str, enum.Enum):
    """Slurm job states as squeue/sacct report them, normalised (parse.py)."""

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
    tasks: dict[str, JobStatus] = field(default_factory=dict)


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
