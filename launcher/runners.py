"""The backend-dispatch point for jobs: one runner per Facility.backend.

A runner does the I/O with a compute backend and returns plain facts; the services in
launcher/services/ turn those facts into state moves. Runners never touch the database
(so no network call ever happens inside a transaction) and every method is safe to retry.

Register a runner for a backend at import time of its app (as launcher.cloud does for "aws"):

    from launcher.runners import JOB_RUNNERS
    JOB_RUNNERS["aws"] = MyRunner()

The contract (see docs/launcher.md):

- `submit(facility=, jobs=, token=)`: start the jobs (one job, or every cell of a sweep,
  which share `token` and carry `array_index`). Idempotent per token: a second call after a
  lost reply returns the first submission (`already_submitted=True`). Raises BackendError.
- `observe(facility=, jobs=)`: the scheduler's view of each job, keyed by Job.pk; a job the
  backend does not know is simply absent. Raises BackendError (transient: try next poll).
- `fetch(facility=, job=)`: the job's progress dict, log tail and final metrics (each may be
  None when not there yet). Raises BackendError.
- `cancel(facility=, jobs=)`: cancel these jobs; cancelling a finished job is not an error.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from allocations.models import Facility

    from .models import Job


@dataclass(frozen=True)
class Submission:
    """Where a submission went. `output_path` may contain `{index}` for array cells."""

    scheduler_id: str
    workdir: str = ""
    output_path: str = ""
    already_submitted: bool = False


@dataclass(frozen=True)
class Observation:
    """One job's state as the backend sees it, in Job.State vocabulary."""

    state: str
    reason: str = ""
    exit_code: int | None = None
    elapsed_seconds: int = 0


@dataclass(frozen=True)
class Fetched:
    """Files read back from a job's working directory."""

    progress: dict[str, Any] | None = None
    log_tail: str | None = None
    metrics: dict[str, Any] | None = None


class JobRunner(Protocol):
    def submit(self, *, facility: Facility, jobs: Sequence[Job], token: str) -> Submission: ...

    def observe(self, *, facility: Facility, jobs: Sequence[Job]) -> dict[int, Observation]: ...

    def fetch(self, *, facility: Facility, job: Job) -> Fetched: ...

    def cancel(self, *, facility: Facility, jobs: Sequence[Job]) -> None: ...


JOB_RUNNERS: dict[str, JobRunner] = {}


def runner_for(facility: Facility) -> JobRunner | None:
    """The registered runner for the facility's backend, or None."""
    return JOB_RUNNERS.get(facility.backend)
