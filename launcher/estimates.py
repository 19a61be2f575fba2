"""GPU-hour and cost estimates for a launch, checked against what is left of the allocation.

The estimate is the recommender's predicted training time where it has data for this workload
and node type, never more than the hard bound the scheduler enforces (wall time x GPUs, which is
what Slurm charges against GrpTRESMins when it decides whether a job may start), and that
bound itself otherwise.

The recommender hook: if the benchmarks app provides
`benchmarks.estimates.job_gpu_hours(*, node_type, params, gpus) -> float | None`, it is asked
first. Until it exists (or when it returns None) the fallback is used.
"""
from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_UP, Decimal
from importlib import import_module
from typing import Any, Mapping

from allocations.models import Allocation


@dataclass(frozen=True)
class Estimate:
    gpu_hours: Decimal
    cost: Decimal
    source: str  # "recommender" or "wall-time"


def _recommender(allocation: Allocation, params: Mapping[str, Any], gpus: int) -> float | None:
    try:
        hook = import_module("benchmarks.estimates").job_gpu_hours
    except (ModuleNotFoundError, AttributeError):
        return None
    try:
        value = hook(node_type=allocation.node_type, params=dict(params), gpus=gpus)
    except Exception:  # noqa: BLE001 - a broken prediction must not block launching; fall back
        return None
    return float(value) if value and value > 0 else None


def estimate_run(*, allocation: Allocation, params: Mapping[str, Any], gpus: int,
                 wall_time_minutes: int, runs: int = 1) -> Estimate:
    """Estimated GPU-hours and cost of `runs` runs of this job on the allocation's facility."""
    bound = Decimal(gpus * wall_time_minutes) / 60
    predicted = _recommender(allocation, params, gpus)
    if predicted is not None and Decimal(str(predicted)) < bound:
        one, source = Decimal(str(predicted)), "recommender"
    else:
        one, source = bound, "wall-time"
    hours = (one * runs).quantize(Decimal("0.001"), rounding=ROUND_UP)
    cost = (hours * allocation.facility.gpu_hour_rate).quantize(Decimal("0.0001"))
    return Estimate(gpu_hours=hours, cost=cost, source=source)
