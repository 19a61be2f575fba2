"""Allocation requests: the Turing request form as data, with its state machine."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from .catalogue import Facility, NodeType, Sensitivity
from .project import Project


class AllocationRequest(models.Model):
    class Kind(models.TextChoices):
        TRIAL = "trial", "Trial"
        FULL = "full", "Full"

    class Purpose(models.TextChoices):
        NEW = "new", "New allocation"
        RENEWAL = "renewal", "Renewal"
        TOP_UP = "top_up", "Top-up of an existing allocation"
        TRIAL_CONVERSION = "trial_conversion", "Conversion of a trial"
        EXTENSION = "extension", "Extension of the end date"
        CLOSURE = "closure", "Early closure"

    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        SUBMITTED = "submitted", "Submitted"
        APPROVED = "approved", "Approved"
        REJECTED = "rejected", "Rejected"
        CHANGES_REQUESTED = "changes_requested", "Changes requested"
        WITHDRAWN = "withdrawn", "Withdrawn"

    EDITABLE = (Status.DRAFT, Status.CHANGES_REQUESTED)
    # Purposes that change an existing allocation (`extends`) rather than grant a new one.
    CHANGES = (Purpose.TOP_UP, Purpose.EXTENSION, Purpose.CLOSURE)
    OPEN = (Status.DRAFT, Status.SUBMITTED, Status.CHANGES_REQUESTED)

    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="requests")
    facility = models.ForeignKey(Facility, on_delete=models.PROTECT, related_name="requests")
    node_type = models.ForeignKey(
        NodeType, on_delete=models.PROTECT, null=True, blank=True, related_name="requests"
    )
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.FULL)
    purpose = models.CharField(max_length=20, choices=Purpose.choices, default=Purpose.NEW)
    # The allocation a renewal, top-up or trial conversion builds on.
    extends = models.ForeignKey(
        "allocations.Allocation",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="follow_up_requests",
    )
    cpu_hours = models.PositiveIntegerField(default=0)
    gpu_hours = models.PositiveIntegerField()
    cloud_budget = models.DecimalField(max_digits=10, decimal_places=2, null=True, blank=True)
    start_date = models.DateField()
    end_date = models.DateField()
    data_sensitivity = models.CharField(
        max_length=10, choices=Sensitivity.choices, default=Sensitivity.PUBLIC
    )
    justification = models.TextField()
    status = models.CharField(
        max_length=20, choices=Status.choices, default=Status.DRAFT, db_index=True
    )
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="allocation_requests"
    )
    submitted_at = models.DateTimeField(null=True, blank=True, db_index=True)
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="reviewed_requests",
    )
    reviewed_at = models.DateTimeField(null=True, blank=True)
    decision_comment = models.TextField(blank=True)
    # What the approval granted (possibly fewer GPU-hours than asked); empty until approved.
    granted_gpu_hours = models.PositiveIntegerField(null=True, blank=True)
    # The allocation this request produced (or topped up) once approved.
    allocation = models.ForeignKey(
        "allocations.Allocation",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="requests",
    )
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["project", "facility", "kind", "status"]),
            models.Index(fields=["project", "-created_at"], name="request_project_recent"),
        ]

    def __str__(self) -> str:
        return f"#{self.pk} {self.get_kind_display()} request for {self.project.code}"

    @property
    def is_editable(self) -> bool:
        return self.status in self.EDITABLE
