"""Slurm's usage: sacct records of the allocation's account become unsaved UsageRecords.

GPU-seconds = elapsed x allocated gres/gpu (sacct AllocTRES), cost = GPU-hours x the facility's
GPU-hour rate. Only finished records are offered, each unique by source and job/step id, so
offering the same records again charges nothing (launcher/services/accounting.py records them).
Notebook sessions' jobs are left out: each session is charged once from its own sacct record
(launcher/slurm/notebooks.py)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from decimal import Decimal

from django.db.models import Max
from django.utils import timezone

from allocations.models import Allocation, UsageRecord

from ..models import Job
from .client import NOTEBOOK_JOB_PREFIX, SlurmClient
from .records import UsageRow

OVERLAP = dt.timedelta(hours=1)
SOURCE = "slurm"  # UsageRecord.source of Slurm's charges (SlurmBackend.usage_source)


def usage_records_from_rows(
    *,
    allocation: Allocation,
    rows: Iterable[UsageRow],
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
        records.append(
            UsageRecord(
                allocation_id=allocation.pk,
                source=SOURCE,
                external_id=f"{allocation.facility_id}/{row.external_id}",
                period_start=start,
                period_end=end,
                gpu_seconds=row.gpu_seconds,
                cost=cost,
                job_id=jobs.get(_ref(row.job_id)),
                detail={
                    "job_id": row.job_id,
                    "step": row.step,
                    "state": row.state,
                    "gpus": row.gpus,
                    "elapsed_seconds": row.elapsed_seconds,
                },
            )
        )
    return records


def usage_records(*, allocation: Allocation, rows: list[UsageRow]) -> list[UsageRecord]:
    """The records for these sacct rows, each attributed to its job (one query)."""
    return usage_records_from_rows(
        allocation=allocation, rows=rows, jobs=_job_ids_by_ref(allocation, rows)
    )


def usage_read(*, allocation: Allocation, client: SlurmClient) -> list[UsageRecord]:
    """The account's finished jobs since the last ingestion (sacct over SSH with the facility's
    client, backend.slurm_client; reads only)."""
    if not allocation.account_name:
        return []
    since = timezone.localtime(_since(allocation)).replace(tzinfo=None)
    rows = client.usage_since(
        account=allocation.account_name, since=since, skip_names=NOTEBOOK_JOB_PREFIX
    )
    return usage_records(allocation=allocation, rows=rows)


def _since(allocation: Allocation) -> dt.datetime:
    latest = allocation.usage.aggregate(end=Max("period_end"))["end"]
    start = allocation.activated_at or allocation.created_at
    return max(start - dt.timedelta(minutes=5), (latest - OVERLAP) if latest else start)


def _ref(slurm_job_id: str) -> tuple[str, int | None]:
    """(job id, array index) of a sacct JobID such as `12` or `12_3`."""
    base, _, index = slurm_job_id.partition("_")
    return base, int(index) if index.isdigit() else None


def _job_ids_by_ref(
    allocation: Allocation, rows: Iterable[UsageRow]
) -> dict[tuple[str, int | None], int]:
    """The allocation's jobs that these rows belong to, by (scheduler id, array index): one
    query whatever the number of rows."""
    refs = {_ref(row.job_id) for row in rows}
    if not refs:
        return {}
    jobs = Job.objects.filter(
        allocation=allocation, scheduler_id__in={base for base, _ in refs}
    ).values_list("pk", "scheduler_id", "array_index")
    return {(sid, index): pk for pk, sid, index in jobs if (sid, index) in refs}
