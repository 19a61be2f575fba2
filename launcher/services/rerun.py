"""Run again: a new job with an earlier job's parameters and seed on the same allocation, so a
result can be reproduced ("the same job run on the same processor should produce the same
results each time it is run"). On CPU a rerun's metrics equal the first run's exactly; on GPUs
some kernels are not deterministic unless the job set `deterministic` (docs/launcher.md)."""

from __future__ import annotations

from typing import Any

from ..models import Job
from ..params import DEFAULT_SEED
from .launch import job_launch


def job_rerun(*, job: Job, by: Any) -> Job:
    """Launch a copy of `job` (its workload, GPUs, wall time, parameters and seed; a dataset is
    resolved and checked again, as at any launch). The same rules as `job_launch`: members of
    the allocation's project and staff may, the ledger must have room (LaunchConflict, 409)."""
    params = {
        k: v for k, v in job.params.items() if k not in ("data_path", "data_root", "dataset_id")
    }
    params.setdefault("seed", DEFAULT_SEED)  # jobs launched before seeds were recorded ran with it
    return job_launch(
        by=by,
        allocation=job.allocation,
        gpus=job.gpus,
        wall_time_minutes=job.wall_time_minutes,
        params=params,
        workload=job.workload,
    )
