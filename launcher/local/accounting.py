"""Charging local jobs: each ended cell's wall time (measured by its supervisor on the
monotonic clock, at most its limit; for a vanished process the time it was seen running)
x the job's GPUs (or CPU slots) becomes one UsageRecord with source `local`, unique by its
external id (facility pk and job token, never a name), so ingesting again charges nothing
twice."""
from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal

from django.db.models import Q
from django.utils import timezone

from allocations.models import Allocation, UsageRecord
from allocations.services import ledger_jobs_change, usage_check_thresholds, usage_record_many

from ..models import Job
from . import cells
from .runner import cell_dir

# Finished jobs are looked at for this long (a cancelled cell's exit.json comes after the move).
RECENT = dt.timedelta(days=1)


def external_id(allocation: Allocation, job: Job) -> str:
    """Stable: the facility's pk and the job's token (a slug may be renamed)."""
    return f"{allocation.facility_id}/{job.token}:{job.array_index or 0}"


def charged_seconds(ended: dict) -> int:
    """A cell's charged seconds: its measured wall time, rounded up, at most its limit."""
    elapsed = math.ceil(float(ended.get("elapsed_seconds") or 0))
    limit = ended.get("limit_seconds")
    return min(elapsed, math.ceil(float(limit))) if limit else elapsed


def usage_ingest_local(*, allocation: Allocation) -> int:
    """Charge the allocation for its ended local cells not charged yet (file reads only, no
    network; idempotent). Returns the number of records offered."""
    facility = allocation.facility
    jobs = list(Job.objects.filter(allocation=allocation).exclude(scheduler_id="").filter(
        Q(state__in=Job.LIVE) | Q(finished_at__gte=timezone.now() - RECENT)).only(
        "pk", "token", "array_index", "gpus", "workdir", "gpu_seconds", "prior_gpu_seconds"))
    rate = facility.gpu_hour_rate
    records, changed = [], []
    for job in jobs:
        ended = cells.read_json(cell_dir(facility, job) / cells.EXIT)
        if ended is None:
            continue
        elapsed = float(ended.get("elapsed_seconds") or 0)
        slots = max(job.gpus, 1)
        gpu_seconds = charged_seconds(ended) * slots
        start = dt.datetime.fromtimestamp(ended["started_at"], tz=dt.timezone.utc)
        end = dt.datetime.fromtimestamp(ended["ended_at"], tz=dt.timezone.utc)
        records.append(UsageRecord(
            allocation_id=allocation.pk, source=UsageRecord.Source.LOCAL,
            external_id=external_id(allocation, job), period_start=start, period_end=end,
            gpu_seconds=gpu_seconds,
            cost=(Decimal(gpu_seconds) / 3600 * rate).quantize(Decimal("0.0001")),
            job_id=job.pk,  # replaces the job's reservation in the ledger (launcher/ledger.py)
            detail={"job_id": job.pk, "elapsed_seconds": elapsed, "slots": slots,
                    "exit_code": ended.get("exit_code"),
                    "vanished": bool(ended.get("vanished"))}))
        if job.gpu_seconds != gpu_seconds + job.prior_gpu_seconds:
            job.gpu_seconds = gpu_seconds + job.prior_gpu_seconds
            changed.append(job)
    if not records:
        return 0
    usage_record_many(records)
    if changed:  # the copied charge shrinks the jobs' reservations in the ledger columns
        with ledger_jobs_change(allocation_ids=[allocation.pk], job_ids=[j.pk for j in changed]):
            Job.objects.bulk_update(changed, ["gpu_seconds"], batch_size=500)
    usage_check_thresholds(allocation_id=allocation.pk)
    return len(records)
