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
        indexes = [models.Index(fields=["allocation", "period_start"])]

    def __str__(self) -> str:
        return f"{self.source}:{self.external_id} {self.gpu_seconds} GPU-s"
