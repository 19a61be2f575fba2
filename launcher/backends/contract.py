"""The backend seam's contract: what every compute backend offers (`ComputeBackend`, with its
optional operations declared as `Capability`s), the one error it raises (`BackendError`,
`PathRefused`, `Unsupported`) and the facts it returns (`Provisioned`, `AccountSynced`,
`Submission`, `Observation`, `Fetched`, `Capacity`, `StartEstimate`, `NotebookUsage`), with the
name checks
every backend applies to what reaches a scheduler. The registry (registry.py) says which
backend serves a facility; the implementations live in launcher/slurm/, launcher/local/ and
launcher/cloud/, each with its own backend-only types.

Backends return facts and never write the portal's database: launcher/provisioning.py records
what `provision` made (membership syncs, the backend's own rows) and activates, fails or
retries the allocation; launcher/services/accounts.py records `sync_account`'s members;
launcher/services/accounting.py stores `usage`'s records; launcher/services/ turn job facts
into moves, so no network call ever happens inside a transaction. See docs/architecture.md
("The backend seam").

The errors and name checks are defined in errors.py (no Django at all: the hub's Slurm spawner
imports them) and re-exported here. Nothing here imports Django at run time.
"""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from .errors import (
    NAME_RE,
    NO_STORAGE,
    TOKEN_RE,
    BackendError,
    PathRefused,
    check_cluster_username,
    check_name,
    confined,
    project_folder,
)

if TYPE_CHECKING:
    from allocations.models import Allocation, Facility, UsageRecord
    from launcher.models import Job
    from launcher.notebooks.models import NotebookSession

__all__ = [
    "NAME_RE",
    "NO_STORAGE",
    "TOKEN_RE",
    "AccountSynced",
    "BackendError",
    "BaseBackend",
    "Capability",
    "Capacity",
    "ComputeBackend",
    "Fetched",
    "MemberSync",
    "NotebookUsage",
    "Observation",
    "PathRefused",
    "Provisioned",
    "StartEstimate",
    "Submission",
    "Unsupported",
    "check_cluster_username",
    "check_name",
    "confined",
    "project_folder",
]


class Capability(str, enum.Enum):
    """The optional operations of a backend. An entry declares the ones it implements."""

    PROVISION = "provision"  # turn a granted allocation into an account/cluster, activate it
    ACCOUNT_SYNC = "account_sync"  # block/unblock/re-cap the account as the allocation changes
    SUBMIT = "submit"  # start jobs and sweep cells (idempotent per token)
    RESUME = "resume"  # the portal resubmits a preempted job from its checkpoint
    OBSERVE = "observe"  # the backend's view of live jobs
    FETCH = "fetch"  # progress, log tail, metrics of a job
    CANCEL = "cancel"  # stop jobs
    PRICE_LAUNCH = "price_launch"  # the backend prices a launch in money (the ledger checks it)
    USAGE = "usage"  # charge finished work to the allocation (exactly once)
    DATA_PATHS = "data_paths"  # resolve a project dataset's path where the files are
    CAPACITY = "capacity"  # the backend knows its own slots: how much runs at once
    NOTEBOOK = "notebook"  # interactive JupyterLab sessions (spawned by the hub)
    START_ESTIMATE = "start_estimate"  # when a new job would start (the scheduler's own word)


class Unsupported(BackendError):
    """The backend does not declare this capability (a programming error: ask `supports`)."""

    def __init__(self, backend: str, capability: Capability) -> None:
        super().__init__(f"the {backend} backend cannot {capability.value}", permanent=True)


# -- facts ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MemberSync:
    """Which of the project's members an account holds after a provision or sync: `logins`
    (the cluster logins now associated) and `refused` (membership id -> why its login was left
    out). The caller records it (allocations.services.project_members_sync_record): the
    refused are kept on their memberships and audited, the others cleared."""

    logins: tuple[str, ...] = ()
    refused: Mapping[int, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Provisioned:
    """What `provision` made: the account the allocation is activated with, and `members`
    when the backend keeps member associations (None: it does not). launcher/provisioning.py
    records them, then calls `record` (a subclass's hook for the backend package's own
    rows, e.g. the cloud's cluster row, written by that package's services), then activates."""

    account: str
    members: MemberSync | None = None

    def record(self, *, allocation: Allocation) -> None:
        """Store what the backend made in the backend package's own rows (nothing here)."""


@dataclass(frozen=True)
class AccountSynced:
    """What `sync_account` did (`done`: "blocked", "active", "nothing to do"...), and
    `members` when it synced member associations (None: it did not)."""

    done: str
    members: MemberSync | None = None


@dataclass(frozen=True)
class Observation:
    """One job's state as the backend sees it, in Job.State vocabulary."""

    state: str
    reason: str = ""
    exit_code: int | None = None
    elapsed_seconds: int = 0


@dataclass(frozen=True)
class Submission:
    """Where a submission went. `output_path` may contain `{index}` for array cells.

    `observed`: what the backend already knows of each job at submission (Job.pk ->
    Observation), e.g. the local backend's processes that started: applied at once by the
    submission service, so a job shows `running` without waiting for the next poll."""

    scheduler_id: str
    workdir: str = ""
    output_path: str = ""
    already_submitted: bool = False
    observed: dict[int, Observation] = field(default_factory=dict)


@dataclass(frozen=True)
class Fetched:
    """Files read back from a job's working directory."""

    progress: dict[str, Any] | None = None
    log_tail: str | None = None
    metrics: dict[str, Any] | None = None


@dataclass(frozen=True)
class Capacity:
    """How much work a backend runs at once, all users together: `slots` GPUs (or CPU slots),
    `in_use` of them busy now. A job needing more than `slots` can never start there."""

    slots: int
    in_use: int = 0


@dataclass(frozen=True)
class StartEstimate:
    """When a job asked for now would start, as the backend itself sees it: `wait_seconds`
    from now (None: the backend has no estimate at the moment), `basis` in words (the
    scheduler's answer, the partition's backlog, a measured time to a ready worker),
    `backlog` (jobs waiting ahead of it, when known) and `interruption_rate` (the share of
    recent spot workers taken back, when the backend has spot workers)."""

    wait_seconds: float | None
    basis: str
    backlog: int | None = None
    interruption_rate: float | None = None


@dataclass(frozen=True)
class NotebookUsage:
    """A notebook session's run as its backend recorded it (local: the supervisor's
    record.json; Slurm: sacct). `gpu_seconds` is what is charged, exactly; `ended` is None
    while it still runs; `external_id` is stable (the charge's UsageRecord id)."""

    started: dt.datetime
    ended: dt.datetime | None
    gpu_seconds: int
    wall_seconds: int
    external_id: str
    reason: str = ""


# -- the protocol -----------------------------------------------------------------------------


@runtime_checkable
class ComputeBackend(Protocol):
    """What every registry entry offers. Methods outside `capabilities` raise Unsupported.

    `name` is what `Facility.backend` holds (validated against the registry: a new backend
    needs no migration), `label` how forms show it, `usage_source` the ledger source its
    charges are recorded under (`UsageRecord.source`)."""

    name: str
    label: str
    usage_source: str
    capabilities: frozenset[Capability]

    def is_configured(self, facility: Facility) -> bool:
        """Whether this facility has what the backend needs to reach it (host, key...)."""

    def provision(self, *, allocation: Allocation) -> Provisioned:
        """Create or complete the allocation's account and say what it made. Idempotent.
        Raises BackendError; the caller (launcher/provisioning.py) records the facts and
        activates, retries or fails the allocation."""

    def sync_account(self, *, allocation: Allocation) -> AccountSynced:
        """Bring the backend account in line with the allocation's state. Idempotent; the
        caller (launcher/services/accounts.py) records the members' outcome."""

    def submit(self, *, facility: Facility, jobs: Sequence[Job], token: str) -> Submission:
        """Start these jobs (one job, or a sweep's cells sharing `token`). A second call with
        the same token finds the first submission (`already_submitted=True`)."""

    def resume(self, *, facility: Facility, job: Job, token: str) -> Submission:
        """Start a preempted job again from its checkpoint, idempotent per `token`."""

    def observe(self, *, facility: Facility, jobs: Sequence[Job]) -> dict[int, Observation]:
        """The backend's view of each job, keyed by Job.pk; unknown jobs are absent."""

    def fetch(self, *, facility: Facility, job: Job) -> Fetched:
        """The job's progress, log tail and metrics (each None when not there yet)."""

    def cancel(self, *, facility: Facility, jobs: Sequence[Job]) -> None:
        """Stop these jobs; cancelling a finished job is not an error."""

    def price_launch(
        self, *, allocation: Allocation, gpus: int, wall_time_minutes: int, runs: int = 1
    ) -> Decimal:
        """The money `runs` jobs of `wall_time_minutes` on `gpus` GPUs would cost at most, which
        the ledger then checks against what is left (only the ledger refuses a launch for
        money). Runs under the allocation row lock: database reads only, no network."""

    def usage(self, *, allocation: Allocation) -> list[UsageRecord]:
        """Unsaved UsageRecords for the allocation's finished work (each with its job when
        known, an external id unique per record, so offering one again charges nothing).
        launcher/services/accounting.py records them."""

    def resolve_data_path(self, *, facility: Facility, project_code: str, location: str) -> str:
        """The dataset at `location` (relative) in the project's folder of the facility's
        project storage, resolved with every symlink followed on the side that sees the files.
        Raises PathRefused when there is no storage, the folder is missing or it lands outside
        the project's folder; a transient BackendError when the backend cannot be reached."""

    def capacity(self, *, facility: Facility) -> Capacity:
        """The facility's slots (GPUs or CPU slots that run at once) and how many are busy.
        Local reads only (files, the database): it is asked at launch and on pages."""

    def start_estimate(
        self, *, allocation: Allocation, user_id: int, gpus: int, wall_time_minutes: int
    ) -> StartEstimate:
        """When a job of `gpus` GPUs and `wall_time_minutes` launched now on the allocation by
        user `user_id` would start (the scheduler's own estimate; a cloud's measured time to a
        ready worker). Reads only, submits nothing. A permanent BackendError when the job could
        not run there at all (the scheduler refuses it: no association, no such node, the
        member has no login), with the scheduler's words; a transient one when unreachable."""

    def notebook_options(
        self, *, allocation: Allocation, session: NotebookSession
    ) -> dict[str, Any]:
        """What the hub's per-backend spawner needs to start this session (JSON-able): at
        least `workdir` (a folder that outlives the session), `run_dir` (the session's own
        folder for the backend's record and logs) and `datasets` ({name: absolute path} of the
        project's registered datasets, resolved and confined). The portal sends these as the
        server's user_options (NOTEBOOKS.md). Reads and local folder creation only; raises
        PathRefused / BackendError."""

    def notebook_usage(self, *, session: NotebookSession) -> NotebookUsage | None:
        """The backend's own record of what the session ran (the basis of its charge), or
        None while there is no record yet. Safe to call repeatedly."""

    def notebook_refusal(self, *, facility: Facility) -> str:
        """Why this backend cannot run a notebook on `facility` now, although it has the
        capability ("" when it can): e.g. the local backend when it cannot run the session
        under the member's own uid. Local reads only; shown on the page, 409 in the API."""


class BaseBackend:
    """Defaults for entries: configured everywhere, every optional operation unsupported.
    Subclasses override the operations they list in `capabilities` (checked by `register`).
    `label` defaults to the name, `usage_source` to the name."""

    name = ""
    label = ""
    usage_source = ""
    capabilities: frozenset[Capability] = frozenset()

    def is_configured(self, facility: Facility) -> bool:
        return True

    def provision(self, *, allocation: Allocation) -> Provisioned:
        raise Unsupported(self.name, Capability.PROVISION)

    def sync_account(self, *, allocation: Allocation) -> AccountSynced:
        raise Unsupported(self.name, Capability.ACCOUNT_SYNC)

    def submit(self, *, facility: Facility, jobs: Sequence[Job], token: str) -> Submission:
        raise Unsupported(self.name, Capability.SUBMIT)

    def resume(self, *, facility: Facility, job: Job, token: str) -> Submission:
        raise Unsupported(self.name, Capability.RESUME)

    def observe(self, *, facility: Facility, jobs: Sequence[Job]) -> dict[int, Observation]:
        raise Unsupported(self.name, Capability.OBSERVE)

    def fetch(self, *, facility: Facility, job: Job) -> Fetched:
        raise Unsupported(self.name, Capability.FETCH)

    def cancel(self, *, facility: Facility, jobs: Sequence[Job]) -> None:
        raise Unsupported(self.name, Capability.CANCEL)

    def price_launch(
        self, *, allocation: Allocation, gpus: int, wall_time_minutes: int, runs: int = 1
    ) -> Decimal:
        raise Unsupported(self.name, Capability.PRICE_LAUNCH)

    def usage(self, *, allocation: Allocation) -> list[UsageRecord]:
        raise Unsupported(self.name, Capability.USAGE)

    def resolve_data_path(self, *, facility: Facility, project_code: str, location: str) -> str:
        raise Unsupported(self.name, Capability.DATA_PATHS)

    def capacity(self, *, facility: Facility) -> Capacity:
        raise Unsupported(self.name, Capability.CAPACITY)

    def start_estimate(
        self, *, allocation: Allocation, user_id: int, gpus: int, wall_time_minutes: int
    ) -> StartEstimate:
        raise Unsupported(self.name, Capability.START_ESTIMATE)

    def notebook_options(
        self, *, allocation: Allocation, session: NotebookSession
    ) -> dict[str, Any]:
        raise Unsupported(self.name, Capability.NOTEBOOK)

    def notebook_usage(self, *, session: NotebookSession) -> NotebookUsage | None:
        raise Unsupported(self.name, Capability.NOTEBOOK)

    def notebook_refusal(self, *, facility: Facility) -> str:
        return ""
