"""What a launch with an `Idempotency-Key` created, so that the same request sent again (a
retry after a lost answer) returns it instead of launching twice (launcher/idempotency.py)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class IdempotencyKey(models.Model):
    class Kind(models.TextChoices):
        JOB = "job", "Job"
        SWEEP = "sweep", "Sweep"
        NOTEBOOK = "notebook", "Notebook session"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="idempotency_keys"
    )
    key = models.CharField(max_length=255)
    # SHA-256 of the endpoint and the canonical JSON body the key was first used with.
    request_hash = models.CharField(max_length=64)
    kind = models.CharField(max_length=10, choices=Kind.choices)
    object_id = models.BigIntegerField()
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "key"], name="launcher_idempotency_user_key")
        ]

    def __str__(self) -> str:
        return f"{self.key} -> {self.kind} #{self.object_id}"
