"""The record of each usage alert: what it said, when, and to whom it was emailed."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from .allocation import Allocation
from .event import Event


class UsageAlert(models.Model):
    """One alert about an allocation's use, written with its audit event by
    `usage_check_thresholds` (allocations/services/usage.py). Which alerts went out is also on
    the allocation (`alerted_thresholds`, `projection_alerted_at`: each once per grant); this
    is what each said and who was emailed. The weekly digest reads its events through it."""

    class Kind(models.TextChoices):
        THRESHOLD = "threshold", "Percent of the grant used"
        PROJECTION = "projection", "Projected to run out early"

    allocation = models.ForeignKey(
        Allocation, on_delete=models.PROTECT, related_name="usage_alerts"
    )
    kind = models.CharField(max_length=12, choices=Kind.choices)
    # The thresholds (percent) this alert covers: one charge may cross several at once.
    thresholds = models.JSONField(default=list, blank=True)
    # The projected run-out date (a projection alert).
    runs_out_on = models.DateField(null=True, blank=True)
    # The audit event: its comment is what the email and the digest say.
    event = models.OneToOneField(Event, on_delete=models.PROTECT, related_name="usage_alert")
    created_at = models.DateTimeField(default=timezone.now)
    # Who got it by email, when (people who chose the weekly digest get it there instead).
    emailed_to = models.JSONField(default=list, blank=True)
    emailed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} alert on allocation #{self.allocation_id}"
