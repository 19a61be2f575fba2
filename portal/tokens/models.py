"""A personal API token: only the SHA-256 of its key is stored; the key is shown once."""
from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class PersonalToken(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="personal_tokens")
    name = models.CharField(max_length=80)
    # The key is `pat_` + 43 random URL-safe characters (256 bits): a plain SHA-256 is enough
    # (no salt or slow hash: nothing to guess), and it makes the lookup one indexed equality.
    key_hash = models.CharField(max_length=64, unique=True)
    # The first characters of the key, to tell tokens apart in the list (not secret).
    prefix = models.CharField(max_length=12)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.user}: {self.name} ({self.prefix}…)"

    def is_expired(self, now=None) -> bool:
        return self.expires_at <= (now or timezone.now())

    @property
    def status(self) -> str:
        if self.revoked_at:
            return "revoked"
        return "expired" if self.is_expired() else "active"
