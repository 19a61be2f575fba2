"""Accounting, the one place that records usage for every backend: a backend's `usage()`
offers unsaved UsageRecords for finished work (Slurm's sacct, the local runner's measured wall
time); they are stored once each (unique by source and external id, so offering the same
records again changes nothing), each job gets its charged GPU-seconds, then the thresholds are
checked (alerts at 50/80/100%, exhaustion)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from allocations.models import Allocation, UsageRecord
from allocations.services import ledger_jobs_change, usage_check_thresholds, usage_record_many

from ..backends.contract import BackendError, Capability
from ..backends.registry import backend_for, backends_with
from ..models import Job
from ..selectors import allocations_owing_usage

log = logging.getLogger(__name__)


def usage_ingest(*, allocation: Allocation) -> int:
    """Charge the allocation for the finished work its backend reports (network outside any
    transaction; idempotent). Returns the number of records offered; a BackendError
    propagates."""
    backend = backend_for(allocation.facility)
    if Capability.USAGE not in backend.capabilities:
        return 0  # not configured (served by `manual`)
    return usage_ingest_records(allocation=allocation, records=backend.usage(allocation=allocation))


def usage_ingest_all() -> int:
    """Charge every allocation whose backend reports usage, each record once: live ones, and
    expired or closed ones until every job is final and recorded (allocations_owing_usage).
    A backend that cannot be read now is tried again on the next beat."""
    offered = 0
    for allocation in allocations_owing_usage(backends=backends_with(Capability.USAGE)):
        try:
            offered += usage_ingest(allocation=allocation)
        except BackendError as error:
            log.warning("usage of allocation %s not read (%s); next time", allocation.pk, error)
    return offered


def usage_ingest_records(*, allocation: Allocation, records: Sequence[UsageRecord]) -> int:
    """The database half of the ingestion (no network): the records are stored (bulk,
    conflicts ignored), jobs get their GPU-seconds, thresholds are checked. Returns the number
    of records offered."""
    if not records:
        return 0
    usage_record_many(list(records))
    _charge_jobs(allocation, records)
    usage_check_thresholds(allocation_id=allocation.pk)
    return len(records)


def _charge_jobs(allocation: Allocation, records: Sequence[UsageRecord]) -> None:
    """Copy each charged job's GPU-seconds onto its Job row (earlier attempts of a resumed job
    included; two queries whatever the number of records). Only finished work is offered, so a
    running job's reservation stands whole until its record is in the ledger; the copied charge
    shrinks the jobs' reservations in the allocation's ledger columns."""
    charged = {r.job_id: r.gpu_seconds for r in records if r.job_id is not None}
    if not charged:
        return
    changed = []
    for job in Job.objects.filter(pk__in=charged).only("pk", "gpu_seconds", "prior_gpu_seconds"):
        seconds = charged[job.pk] + job.prior_gpu_seconds
        if seconds != job.gpu_seconds:
            job.gpu_seconds = seconds
            changed.append(job)
    if changed:
        with ledger_jobs_change(allocation_ids=[allocation.pk], job_ids=[j.pk for j in changed]):
            Job.objects.bulk_update(changed, ["gpu_seconds"], batch_size=2000)
