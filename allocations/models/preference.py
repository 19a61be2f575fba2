"""How each person wants to hear about usage alerts: one email per alert, or a weekly digest."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class NotificationPreference(models.Model):
    class Usage(models.TextChoices):
        EACH = "each", "An email for each usage alert"
        WEEKLY = "weekly", "One weekly digest of usage alerts"

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notification_preference"
    )
    usage_alerts = models.CharField(max_length=10, choices=Usage.choices, default=Usage.EACH)
    # The end of the period the last digest covered: the next one starts there, so a retried
    # or late run neither repeats nor skips an alert.
    digest_sent_until = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.user}: {self.usage_alerts}"
