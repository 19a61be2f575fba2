"""Granted allocations and their life cycle."""

from __future__ import annotations

from decimal import Decimal

from django.db import models
from django.utils import timezone

from .catalogue import Facility, NodeType
from .project import Project


class Allocation(models.Model):
    class Status(models.TextChoices):
        PROVISIONING = "provisioning", "Provisioning"
        ACTIVE = "active", "Active"
        FAILED = "failed", "Failed"
        SUSPENDED = "suspended", "Suspended"
        EXHAUSTED = "exhausted", "Exhausted"
        EXPIRED = "expired", "Expired"
        CLOSED = "closed", "Closed"

    # States in which the allocation still counts as open (blocks a second trial, can be used
    # or come back into use).
    LIVE = (Status.PROVISIONING, Status.ACTIVE, Status.SUSPENDED, Status.EXHAUSTED)
    # States in which nothing may run on the allocation: backends block its account, stop its
    # workers and refuse launches (the one home of this rule).
    BLOCKED = (Status.SUSPENDED, Status.EXHAUSTED, Status.EXPIRED, Status.CLOSED)

    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="allocations")
    facility = models.ForeignKey(Facility, on_delete=models.PROTECT, related_name="allocations")
    node_type = models.ForeignKey(
        NodeType, on_delete=models.PROTECT, null=True, blank=True, related_name="allocations"
    )
    kind = models.CharField(max_length=10, default="full")
    gpu_hours = models.DecimalField("granted GPU-hours", max_digits=12, decimal_places=2)
    cpu_hours = models.PositiveIntegerField(default=0)
    budget = models.DecimalField(max_digits=12, decimal_places=2, null=True, blank=True)
    start_date = models.DateField()
    end_date = models.DateField()
    status = models.CharField(
        max_length=20, choices=Status.choices, default=Status.PROVISIONING, db_index=True
    )
    status_reason = models.TextField(blank=True)
    # The account (Slurm account, cloud cluster tag) the backend created for it.
    account_name = models.CharField(max_length=64, blank=True)
    # Usage thresholds (percent) already alerted, so each alert goes out once.
    alerted_thresholds = models.JSONField(default=list, blank=True)
    # When the projection alert ("runs out more than 7 days before the end date") went out:
    # once per grant, cleared by a top-up as alerted_thresholds is (allocations/burn.py).
    projection_alerted_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    activated_at = models.DateTimeField(null=True, blank=True)
    # The ledger, kept as data (docs/ledger.md): changed only by F() updates under the row lock
    # in allocations/ledger.py, recomputed from the records by a beat task.
    gpu_seconds_used = models.BigIntegerField("charged GPU-seconds", default=0, editable=False)
    spend = models.DecimalField(max_digits=16, decimal_places=4, default=Decimal(0), editable=False)
    gpu_seconds_reserved = models.DecimalField(
        max_digits=20, decimal_places=3, default=Decimal(0), editable=False
    )
    cost_reserved = models.DecimalField(
        max_digits=16, decimal_places=4, default=Decimal(0), editable=False
    )

    LEDGER_FIELDS = ("gpu_seconds_used", "spend", "gpu_seconds_reserved", "cost_reserved")

    class Meta:
        ordering = ["-created_at", "-id"]
        # Lists newest first (the staff's API list and pages): a page by index, not a sort of
        # every allocation (docs/performance.md, "A centre's scale").
        # The staff's "near their end" list: active allocations by end date, walked from the
        # soonest until 50 match, not a sort of every active one.
        indexes = [
            models.Index(fields=["created_at", "id"], name="allocation_created"),
            models.Index(
                fields=["end_date", "id"],
                name="allocation_active_end",
                condition=models.Q(status="active"),
            ),
        ]

    def __str__(self) -> str:
        return f"Allocation #{self.pk} ({self.project.code} on {self.facility.slug})"

    def save(self, *args, **kwargs) -> None:
        """Saving a loaded row never writes the ledger columns back: they move only by the
        ledger's F() updates, and an in-memory copy (an admin form) may be stale."""
        if not self._state.adding and kwargs.get("update_fields") is None:
            kwargs["update_fields"] = [
                f.name
                for f in self._meta.concrete_fields
                if not f.primary_key and f.name not in self.LEDGER_FIELDS
            ]
        super().save(*args, **kwargs)

    @property
    def gpu_seconds_granted(self) -> Decimal:
        return self.gpu_hours * 3600

    @property
    def gpu_hours_used(self) -> Decimal:
        """Charged GPU-hours, derived from the integer seconds, unrounded."""
        return Decimal(self.gpu_seconds_used) / 3600

    def default_account_name(self) -> str:
        return f"{self.project.code.lower()}-a{self.pk}"
