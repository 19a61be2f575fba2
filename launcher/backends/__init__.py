"""The backend seam: the registry of backends (registry.py: one entry per Facility.backend,
with declared capabilities) and the plain dataclasses and errors backends speak (base.py).
The implementations live beside it: launcher/slurm/, launcher/local/, launcher/cloud/.

Nothing in this package imports Django at run time, so its pieces can be tested alone.
"""

from launcher.backends.base import (
    AccountState,
    SchedulerClient,
    BackendError,
    JobSpec,
    JobState,
    JobStatus,
    SubmitResult,
    UsageRow,
)

__all__ = [
    "AccountState",
    "SchedulerClient",
    "BackendError",
    "JobSpec",
    "JobState",
    "JobStatus",
    "SubmitResult",
    "UsageRow",
]
