"""The launcher's data: jobs (one training run each) and sweeps (a grid of jobs); the keys of
idempotent launches; the workers' heartbeat; the total of jobs the database keeps."""

from .heartbeat import WorkerHeartbeat
from .idempotency import IdempotencyKey
from .job import Job
from .job_count import JobCount
from .job_month import JobMonth, JobMonthSize, RolledMonth
from .sweep import Sweep

__all__ = [
    "IdempotencyKey",
    "Job",
    "JobCount",
    "JobMonth",
    "JobMonthSize",
    "RolledMonth",
    "Sweep",
    "WorkerHeartbeat",
]
