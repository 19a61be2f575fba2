"""Writes: recording a benchmark result. The API, the admin and seeding go through here."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.db import transaction

from allocations.models import NodeType
from benchmarks.models import BenchmarkResult, Workload
from benchmarks.selectors import can_submit_results
from core.errors import Forbidden, Invalid, clean_or_invalid


@transaction.atomic
def benchmark_result_record(
    *,
    by: Any,
    node_type: NodeType,
    workload: Workload,
    precision: str,
    strategy: str,
    gpus: int,
    batch_size: int,
    image_size: int,
    throughput: float,
    throughput_min: float | None = None,
    throughput_max: float | None = None,
    repeats: int = 1,
    peak_memory_gb: float | None = None,
    source: str = "measured",
    citation: str = "",
    software: dict | None = None,
    measured_at: dt.datetime | None = None,
    notes: str = "",
) -> BenchmarkResult:
    """Store one result submitted by `by` and return it.

    Only staff and members of the `benchmarkers` group may call it (Forbidden
    otherwise). A published figure needs a citation; the median must lie within min..max.
    Values it cannot store raise Invalid per field and store nothing. Not idempotent: each
    call is a new measurement (repeated runs are data, not duplicates).
    """
    if not can_submit_results(by):
        raise Forbidden(
            "Only staff and members of the benchmarkers group may record benchmark results."
        )
    if source == BenchmarkResult.Source.PUBLISHED and not citation.strip():
        raise Invalid({"citation": "A published result needs a citation."})
    result = BenchmarkResult(
        node_type=node_type,
        workload=workload,
        precision=precision,
        strategy=strategy,
        gpus=gpus,
        batch_size=batch_size,
        image_size=image_size,
        throughput=throughput,
        throughput_min=throughput_min,
        throughput_max=throughput_max,
        repeats=repeats,
        peak_memory_gb=peak_memory_gb,
        source=source,
        citation=citation,
        software=software or {},
        measured_at=measured_at,
        notes=notes,
        submitted_by=by,
    )
    _check_spread(result)
    clean_or_invalid(result)
    result.save()
    return result


def _check_spread(result: BenchmarkResult) -> None:
    """Per-field messages for an inconsistent spread (the database constraints say it tersely)."""
    errors: dict[str, str] = {}
    if result.throughput_min is not None and result.throughput_min > result.throughput:
        errors["throughput_min"] = "Must not exceed throughput (the median)."
    if result.throughput_max is not None and result.throughput_max < result.throughput:
        errors["throughput_max"] = "Must not be below throughput (the median)."
    if result.strategy == "single" and result.gpus != 1:
        errors["strategy"] = "single means one GPU; use ddp, fsdp or deepspeed."
    if errors:
        raise Invalid(errors)


def benchmark_result_from_job(
    *,
    key: str,
    node_type: NodeType,
    model: str,
    dims: int,
    precision: str,
    gpus: int,
    batch_size: int,
    image_size: int,
    throughput: float,
    peak_memory_gb: float | None,
    software: dict,
    measured_at: dt.datetime | None,
    predicted_hours: float | None,
    measured_hours: float | None,
    overhead_seconds: float | None = None,
    notes: str = "",
) -> BenchmarkResult | None:
    """Record what a finished training job measured, as a result of source `job`.

    A system write (the job monitor calls it), so no user check. Idempotent on `key`
    ("job-<id>"): a second call returns the stored result and changes nothing. Returns None,
    storing nothing, where the catalogue has no workload for `model`/`dims` or the throughput
    is not positive (nothing measured).
    """
    workload = Workload.objects.filter(model=model, dims=dims).first()
    if workload is None or not throughput or throughput <= 0:
        return None
    result, _ = BenchmarkResult.objects.get_or_create(
        catalogue_key=key,
        defaults=dict(
            node_type=node_type,
            workload=workload,
            precision=precision,
            strategy="ddp" if gpus > 1 else "single",
            gpus=gpus,
            batch_size=batch_size,
            image_size=image_size,
            throughput=throughput,
            repeats=1,
            peak_memory_gb=peak_memory_gb,
            source=BenchmarkResult.Source.JOB,
            software=software or {},
            measured_at=measured_at,
            citation="training throughput reported by the portal's own job (progress.json)",
            predicted_hours=predicted_hours,
            measured_hours=measured_hours,
            overhead_seconds=overhead_seconds,
            notes=notes,
        ),
    )
    return result
