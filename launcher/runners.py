"""The facts a backend's job operations return (see launcher/backends/registry.py for the
seam itself: which backend serves a facility and what it can do).

Backends never touch Job rows: they return these, and launcher/services/ turn them into
state moves, so no network call ever happens inside a transaction.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any


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
