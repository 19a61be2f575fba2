"""Accounting: the scheduler's own records become UsageRecords on the allocation.

GPU-seconds = elapsed x allocated gres/gpu (sacct AllocTRES), cost = GPU-hours x the facility's
GPU-hour rate. Only finished records are charged, each once (unique by source and job/step id),
so ingesting the same records again changes nothing. Then the thresholds are checked (alerts at
50/80/100%, exhaustion)."""
from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from decimal import Decimal

from django.db.models import Max
from django.utils import timezone

from allocations.models import Allocation, UsageRecord
from allocations.services import ledger_jobs_change, usage_check_thresholds, usage_record_many

from ..backends.base import UsageRow
from ..slurm.connection import slurm_backend
from ..models import Job

OVERLAP = dt.timedelta(hours=1)


def usage_records_from_rows(*, allocation: Allocation, rows: Iterable[UsageRow],
                            jobs: Mapping[tuple[str, int | None], int] | None = None,
                            ) -> list[UsageRecord]:
    """UsageRecords for the finished rows (pure: no queries). `jobs` maps (scheduler id,
    array index) to the Job it belongs to, so each charge is attributed to its job."""
    jobs = jobs or {}
    rate = allocation.facility.gpu_hour_rate
    records = []
    for row in rows:
        if row.end is None:
            continue  # still running: charged once, when it has finished
        end = timezone.make_aware(row.end) if timezone.is_naive(row.end) else row.end
        start = row.start or row.end
        start = timezone.make_aware(start) if timezone.is_naive(start) else start
        cost = (Decimal(row.gpu_seconds) / 3600 * rate).quantize(Decimal("0.0001"))
        records.append(UsageRecord(
            allocation_id=allocation.pk, source=UsageRecord.Source.SLURM,
            external_id=f"{allocation.facility_id}/{row.external_id}", period_start=start,
            period_end=end, gpu_seconds=row.gpu_seconds, cost=cost,
            job_id=jobs.get(_ref(row.job_id)),
            detail={"job_id": row.job_id, "step": row.step, "state": row.state,
                    "gpus": row.gpus, "elapsed_seconds": row.elapsed_seconds}))
    return records


def _since(allocation: Allocation) -> dt.datetime:
    latest = allocation.usage.aggregate(end=Max("period_end"))["end"]
    start = allocation.activated_at or allocation.created_at
    return max(start - dt.timedelta(minutes=5), (latest - OVERLAP) if latest else start)


def usage_ingest_slurm(*, allocation: Allocation) -> int:
    """Charge the allocation for its account's finished Slurm jobs since the last ingestion
    (SSH outside any transaction; idempotent). Returns the number of rows offered."""
    if not allocation.account_name:
        return 0
    since = timezone.localtime(_since(allocation)).replace(tzinfo=None)
    rows = slurm_backend(allocation.facility).usage_since(account=allocation.account_name,
                                                          since=since)
    return usage_ingest_rows(allocation=allocation, rows=rows)


def usage_ingest_rows(*, allocation: Allocation, rows: list[UsageRow]) -> int:
    """The database half of the ingestion (no network): finished rows become UsageRecords
    (bulk, conflicts ignored), jobs get their GPU-seconds, thresholds are checked. Returns the
    number of records offered."""
    jobs = _jobs_by_ref(allocation, rows)
    records = usage_records_from_rows(allocation=allocation, rows=rows,
                                      jobs={ref: job.pk for ref, job in jobs.items()})
    usage_record_many(records)
    _charge_jobs(allocation, jobs, rows)
    usage_check_thresholds(allocation_id=allocation.pk)
    return len(records)


def _ref(slurm_job_id: str) -> tuple[str, int | None]:
    """(job id, array index) of a sacct JobID such as `12` or `12_3`."""
    base, _, index = slurm_job_id.partition("_")
    return base, int(index) if index.isdigit() else None


def _jobs_by_ref(allocation: Allocation, rows: Iterable[UsageRow]) -> dict[tuple[str, int | None], Job]:
    """The allocation's jobs that these rows belong to, by (scheduler id, array index): one
    query whatever the number of rows."""
    refs = {_ref(row.job_id) for row in rows}
    if not refs:
        return {}
    jobs = Job.objects.filter(allocation=allocation,
                              scheduler_id__in={base for base, _ in refs}).only(
        "pk", "scheduler_id", "array_index", "gpu_seconds", "prior_gpu_seconds")
    return {(job.scheduler_id, job.array_index): job for job in jobs
            if (job.scheduler_id, job.array_index) in refs}


def _charge_jobs(allocation: Allocation, jobs: Mapping[tuple[str, int | None], Job],
                 rows: Iterable[UsageRow]) -> None:
    """Copy each finished job's charged GPU-seconds onto its Job row (one query whatever the
    number of rows). A running job's elapsed time so far is not charged yet, so it is not
    copied either: until its record is in the ledger its reservation must stand whole. The
    copied charge shrinks the jobs' reservations in the allocation's ledger columns."""
    changed = []
    for row in rows:
        job = jobs.get(_ref(row.job_id))
        if job is None or row.end is None:
            continue
        seconds = row.gpu_seconds + job.prior_gpu_seconds  # earlier attempts of a resumed job
        if seconds != job.gpu_seconds:
            job.gpu_seconds = seconds
            changed.append(job)
    if changed:
        with ledger_jobs_change(allocation_ids=[allocation.pk], job_ids=[j.pk for j in changed]):
            Job.objects.bulk_update(changed, ["gpu_seconds"], batch_size=500)
