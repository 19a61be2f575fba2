"""The audit trail: one row for every state change of any object."""

from __future__ import annotations

from django.conf import settings
from django.contrib.contenttypes.fields import GenericForeignKey
from django.contrib.contenttypes.models import ContentType
from django.db import models
from django.utils import timezone


class Event(models.Model):
    content_type = models.ForeignKey(ContentType, on_delete=models.CASCADE)
    object_id = models.PositiveBigIntegerField()
    subject = GenericForeignKey("content_type", "object_id")
    # None means the system did it (auto-approval, expiry, exhaustion).
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True
    )
    from_state = models.CharField(max_length=30, blank=True)
    to_state = models.CharField(max_length=30)
    comment = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    # Not columns: what selectors.project_history sets on the rows it returns, for the page.
    about: str
    about_url: str

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["content_type", "object_id", "created_at"])]

    def __str__(self) -> str:
        who = self.actor or "system"
        return f"{who}: {self.from_state or '-'} -> {self.to_state}"

    @property
    def actor_label(self) -> str:
        return self.actor.get_username() if self.actor else "system"
