"""The backend seam: one registry entry per `Facility.backend` (local, slurm, aws, manual).

Each entry is an object implementing `ComputeBackend` and declaring, in `capabilities`, which
of the optional operations it supports. Services ask the registry (`supports`, `backend_for`)
instead of probing with hasattr or comparing backend names; that rule is kept by
tests/portal/test_architecture.py. Entries register themselves from their app's
`AppConfig.ready()` (launcher: local, slurm, manual; launcher.cloud: aws).

A facility whose backend is not registered, or not configured (a Slurm facility with no host or
key yet), is served by the `manual` entry: staff set it up by hand, and every page says so
before anyone relies on it (`is_connected`).

Operations do I/O with the backend and return plain facts (an account name, unsaved usage
records, launcher.runners dataclasses) or raise one `BackendError(message, permanent=...)`.
No entry moves an allocation's or a job's state: launcher/provisioning.py decides fail / retry
/ activate for every backend's `provision`, launcher/services/accounting.py records every
backend's `usage`, and launcher/services/ turn job facts into moves. See docs/architecture.md
("The backend seam") for the contract of each capability.
"""
from __future__ import annotations

import enum
from collections.abc import Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from .base import BackendError

if TYPE_CHECKING:
    from allocations.models import Allocation, Facility, UsageRecord
    from launcher.models import Job
    from launcher.notebooks.models import NotebookSession
    from launcher.runners import Capacity, Fetched, NotebookUsage, Observation, Submission


class Capability(str, enum.Enum):
    """The optional operations of a backend. An entry declares the ones it implements."""

    PROVISION = "provision"        # turn a granted allocation into an account/cluster, activate it
    ACCOUNT_SYNC = "account_sync"  # block/unblock/re-cap the account as the allocation changes
    SUBMIT = "submit"              # start jobs and sweep cells (idempotent per token)
    RESUME = "resume"              # the portal resubmits a preempted job from its checkpoint
    OBSERVE = "observe"            # the backend's view of live jobs
    FETCH = "fetch"                # progress, log tail, metrics of a job
    CANCEL = "cancel"              # stop jobs
    PRICE_LAUNCH = "price_launch"  # the backend prices a launch in money (the ledger checks it)
    USAGE = "usage"                # charge finished work to the allocation (exactly once)
    DATA_PATHS = "data_paths"      # resolve a project dataset's path where the files are
    CAPACITY = "capacity"          # the backend knows its own slots: how much runs at once
    NOTEBOOK = "notebook"          # interactive JupyterLab sessions (spawned by the hub)


class Unsupported(BackendError):
    """The backend does not declare this capability (a programming error: ask `supports`)."""

    def __init__(self, backend: str, capability: Capability) -> None:
        super().__init__(f"the {backend} backend cannot {capability.value}", permanent=True)


@runtime_checkable
class ComputeBackend(Protocol):
    """What every registry entry offers. Methods outside `capabilities` raise Unsupported."""

    name: str
    capabilities: frozenset[Capability]

    def is_configured(self, facility: Facility) -> bool:
        """Whether this facility has what the backend needs to reach it (host, key...)."""

    def provision(self, *, allocation: Allocation) -> str:
        """Create or complete the allocation's account and return its name. Idempotent.
        Raises BackendError; the caller (launcher/provisioning.py) activates, retries or
        fails the allocation."""

    def sync_account(self, *, allocation: Allocation) -> str:
        """Bring the backend account in line with the allocation's state. Idempotent."""

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

    def price_launch(self, *, allocation: Allocation, gpus: int, wall_time_minutes: int,
                     runs: int = 1) -> Decimal:
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

    def notebook_options(self, *, allocation: Allocation, session: NotebookSession) -> dict[str, Any]:
        """What the hub's per-backend spawner needs to start this session (JSON-able): at
        least `workdir` (a folder that outlives the session), `run_dir` (the session's own
        folder for the backend's record and logs) and `datasets` ({name: absolute path} of the
        project's registered datasets, resolved and confined). The portal sends these as the
        server's user_options (NOTEBOOKS.md). Reads and local folder creation only; raises
        PathRefused / BackendError."""

    def notebook_usage(self, *, session: NotebookSession) -> NotebookUsage | None:
        """The backend's own record of what the session ran (the basis of its charge), or
        None while there is no record yet. Safe to call repeatedly."""


class BaseBackend:
    """Defaults for entries: configured everywhere, every optional operation unsupported.
    Subclasses override the operations they list in `capabilities` (checked by `register`)."""

    name = ""
    capabilities: frozenset[Capability] = frozenset()

    def is_configured(self, facility: Facility) -> bool:
        return True

    def provision(self, *, allocation: Allocation) -> str:
        raise Unsupported(self.name, Capability.PROVISION)

    def sync_account(self, *, allocation: Allocation) -> str:
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

    def price_launch(self, *, allocation: Allocation, gpus: int, wall_time_minutes: int,
                     runs: int = 1) -> Decimal:
        raise Unsupported(self.name, Capability.PRICE_LAUNCH)

    def usage(self, *, allocation: Allocation) -> list[UsageRecord]:
        raise Unsupported(self.name, Capability.USAGE)

    def resolve_data_path(self, *, facility: Facility, project_code: str, location: str) -> str:
        raise Unsupported(self.name, Capability.DATA_PATHS)

    def capacity(self, *, facility: Facility) -> Capacity:
        raise Unsupported(self.name, Capability.CAPACITY)

    def notebook_options(self, *, allocation: Allocation, session: NotebookSession) -> dict[str, Any]:
        raise Unsupported(self.name, Capability.NOTEBOOK)

    def notebook_usage(self, *, session: NotebookSession) -> NotebookUsage | None:
        raise Unsupported(self.name, Capability.NOTEBOOK)


class ManualBackend(BaseBackend):
    """Staff set the facility up by hand and activate allocations from the admin: nothing is
    provisioned, submitted or charged by the portal."""

    name = "manual"
    capabilities: frozenset[Capability] = frozenset()


MANUAL = "manual"
_METHODS = {**{c: c.value for c in Capability}, Capability.ACCOUNT_SYNC: "sync_account",
            Capability.DATA_PATHS: "resolve_data_path", Capability.NOTEBOOK: "notebook_options"}
_REGISTRY: dict[str, ComputeBackend] = {}


def register(backend: ComputeBackend) -> None:
    """Register (or replace) the entry for `backend.name`. Refuses an entry that declares a
    capability it does not implement, so `supports` never promises what is not there."""
    if not isinstance(backend, ComputeBackend) or not backend.name:
        raise TypeError(f"{backend!r} does not implement ComputeBackend")
    for capability in backend.capabilities:
        method = _METHODS[capability]
        if getattr(type(backend), method, None) in (None, getattr(BaseBackend, method)):
            raise TypeError(f"{backend.name} declares {capability.value} but does not implement it")
    _REGISTRY[backend.name] = backend


def registered() -> dict[str, ComputeBackend]:
    """Every entry by name (for docs, admin and tests)."""
    return dict(_REGISTRY)


def backend_for(facility: Facility) -> ComputeBackend:
    """The entry serving this facility: its backend's, or `manual` when that backend is not
    registered or the facility is not configured for it."""
    entry = _REGISTRY.get(facility.backend)
    if entry is None or not entry.is_configured(facility):
        return _REGISTRY.get(MANUAL) or ManualBackend()
    return entry


def supports(facility: Facility, capability: Capability) -> bool:
    """Whether the facility's entry declares `capability`."""
    return capability in backend_for(facility).capabilities


def is_connected(facility: Facility) -> bool:
    """Whether the portal itself can provision on this facility (else staff do it by hand)."""
    return supports(facility, Capability.PROVISION)


def backends_with(capability: Capability) -> list[str]:
    """Names of the registered backends declaring `capability` (for database filters)."""
    return sorted(name for name, entry in _REGISTRY.items() if capability in entry.capabilities)


__all__: list[Any] = [
    "BaseBackend", "Capability", "ComputeBackend", "ManualBackend", "Unsupported",
    "backend_for", "backends_with", "is_connected", "register", "registered", "supports",
]
