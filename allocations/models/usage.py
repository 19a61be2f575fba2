"""The usage ledger: what the backends say was used, charged to an allocation."""

from __future__ import annotations

from django.db import models

from ..backend_names import CORRECTION, usage_source_choices
from .allocation import Allocation


class UsageRecord(models.Model):
    CORRECTION = CORRECTION  # staff's audited correction (services.usage_correct)

    allocation = models.ForeignKey(Allocation, on_delete=models.PROTECT, related_name="usage")
    # The backend's ledger source (each registered backend's `usage_source`: slurm, cloud,
    # local, ...) or `correction`: the choices are the registry's, so no migration per backend.
    source = models.CharField(max_length=32, choices=usage_source_choices)
    # Unique per source: Slurm job and step id, cloud instance id and hour, local job id.
    external_id = models.CharField(max_length=120)
    period_start = models.DateTimeField(db_index=True)
    period_end = models.DateTimeField()
    gpu_seconds = models.BigIntegerField(default=0)
    cpu_seconds = models.BigIntegerField(default=0)
    cost = models.DecimalField(max_digits=12, decimal_places=4, default=0)
    # Free-form facts for reports: instance type, market, job id, node.
    detail = models.JSONField(default=dict, blank=True)
    # The launcher's job this charge is for, when the backend knows it (a plain id: the ledger
    # needs nothing of the launcher's models). Lets a job's reservation shrink as it is charged.
    job_id = models.PositiveBigIntegerField(null=True, blank=True, db_index=True)
    recorded_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-period_start"]
        constraints = [
            models.UniqueConstraint(fields=["source", "external_id"], name="usage_unique_external")
        ]
        indexes = [
            models.Index(fields=["allocation", "period_start"]),
            # The burn rate's windows (the last 7 and 30 days by end), per allocation.
            models.Index(fields=["allocation", "period_end"], name="usage_allocation_end"),
        ]

    def __str__(self) -> str:
        return f"{self.source}:{self.external_id} {self.gpu_seconds} GPU-s"


class UsageMonth(models.Model):
    """The ledger's records summed by allocation and calendar month (of `period_start`, in the
    portal's time zone), kept by the ledger's writes in the same transaction (allocations/
    rollups.py): a year's report reads twelve rows an allocation, not every record. Checked
    and corrected against the records by the ledger's reconcile, like the allocation's columns."""

    allocation = models.ForeignKey(Allocation, on_delete=models.PROTECT, related_name="months")
    month = models.DateField()  # the first day of the month
    records = models.PositiveIntegerField(default=0)
    gpu_seconds = models.BigIntegerField(default=0)
    cost = models.DecimalField(max_digits=16, decimal_places=4, default=0)
    # Of gpu_seconds: charged to a portal job, and to a notebook session (the report's split).
    job_gpu_seconds = models.BigIntegerField(default=0)
    notebook_gpu_seconds = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["allocation", "month"], name="usage_month_unique")
        ]
        indexes = [models.Index(fields=["month", "allocation"])]

    def __str__(self) -> str:
        return f"allocation {self.allocation_id} {self.month:%Y-%m}: {self.gpu_seconds} GPU-s"


class LedgerPass(models.Model):
    """One pass of the ledger's reconcile (allocations/ledger.py): the newest record it had seen,
    so the next hourly pass checks only what changed since; a full pass runs once a day."""

    ran_at = models.DateTimeField(auto_now_add=True, db_index=True)
    last_record_id = models.BigIntegerField(default=0)
    full = models.BooleanField(default=False)
    allocations_checked = models.PositiveIntegerField(default=0)
    drifts = models.PositiveIntegerField(default=0)
    seconds = models.FloatField(default=0)

    def __str__(self) -> str:
        kind = "full" if self.full else "incremental"
        return f"{kind} pass at {self.ran_at:%Y-%m-%d %H:%M}: {self.drifts} drift(s)"
