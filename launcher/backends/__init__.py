"""Compute backends: one small interface (base.py), one real implementation per kind.

Nothing in this package imports Django, so the backends can be tested and used alone.
"""

from launcher.backends.base import (
    AccountState,
    Backend,
    BackendError,
    JobSpec,
    JobState,
    JobStatus,
    SubmitResult,
    UsageRow,
)

__all__ = [
    "AccountState",
    "Backend",
    "BackendError",
    "JobSpec",
    "JobState",
    "JobStatus",
    "SubmitResult",
    "UsageRow",
]
