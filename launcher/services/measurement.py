"""Every run is a measurement: a succeeded job's own figures become a benchmark result.

The trainer writes its training throughput (images/s over the steps it trained, all ranks),
peak memory and software versions into progress.json and metrics.json
(launcher/workloads/ctxray/progress.py). Once the monitor has read the metrics of a succeeded
job, `job_measurement_record` stores them as a `BenchmarkResult` of source `job` on the
allocation's node type, with the prediction made at launch and the hours the run took, so the
recommender predicts the next launch from it and /benchmarks/ shows its calibration.
"""

from __future__ import annotations

import logging
from typing import Any

from benchmarks.models import BenchmarkResult
from benchmarks.services import benchmark_result_from_job

from ..models import Job

log = logging.getLogger(__name__)


def _figures(job: Job) -> dict[str, Any] | None:
    """What the run measured, from metrics.json (preferred) and progress.json; None if it
    reported no throughput (an older trainer, or a run too short to time a step)."""
    metrics, progress = job.metrics or {}, job.progress or {}
    measured = metrics.get("measured") or {}
    throughput = job.images_per_s  # the one definition (Job.images_per_s)
    config, runtime = metrics.get("config") or {}, metrics.get("runtime") or {}
    if not throughput or not config.get("model"):
        return None
    return {
        "model": config["model"],
        "dims": int(config.get("dims") or 2),
        "image_size": int(config.get("size") or 224),
        "batch_size": int(config.get("batch_size") or 16),
        "gpus": int(runtime.get("world_size") or progress.get("world_size") or 1),
        "precision": "bf16" if runtime.get("bf16_autocast") else "fp32",
        "throughput": float(throughput),
        "peak_memory_gb": measured.get("peak_memory_gb") or progress.get("peak_memory_gb"),
        "software": measured.get("software") or {},
        "train_seconds": measured.get("train_seconds"),
    }


def run_hours(job: Job) -> float | None:
    """Wall hours the run took: the scheduler's charged elapsed time where accounting has it
    (GPU-seconds / GPUs), else the time between the polls that saw it start and finish."""
    if job.gpu_seconds and job.gpus:
        return job.gpu_seconds / job.gpus / 3600
    if job.started_at and job.finished_at and job.finished_at > job.started_at:
        return (job.finished_at - job.started_at).total_seconds() / 3600
    return None


def job_measurement_record(*, job: Job) -> BenchmarkResult | None:
    """Store a succeeded job's measured throughput as a benchmark result and link it.

    Idempotent: a job already linked, or polled again, adds nothing (the result's key is
    "job-<id>", unique). Does nothing for a job that did not succeed, has no node type, or
    reported no throughput. Safe under concurrent polls (get-or-create on the unique key,
    then a compare-and-swap link).
    """
    if job.state != Job.State.SUCCEEDED or job.benchmark_result_id:
        return None
    node_type = job.allocation.node_type
    figures = _figures(job)
    if node_type is None or figures is None:
        return None
    predicted = float(job.predicted_hours) if job.predicted_hours is not None else None
    hours, train_seconds = run_hours(job), figures.pop("train_seconds")
    overhead = (
        hours * 3600 - train_seconds
        if hours and train_seconds is not None and hours * 3600 > train_seconds
        else None
    )
    result = benchmark_result_from_job(
        key=f"job-{job.pk}",
        node_type=node_type,
        measured_at=job.finished_at,
        predicted_hours=predicted,
        measured_hours=hours,
        overhead_seconds=overhead,
        notes=f"Job #{job.pk}; predicted at launch: {job.estimate_basis or 'no prediction'}",
        **figures,
    )
    if result is None:
        return None
    Job.objects.filter(pk=job.pk, benchmark_result__isnull=True).update(benchmark_result=result)
    job.benchmark_result = result
    return result
