"""The link between a portal account and an OpenID Connect provider's subject."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class ExternalIdentity(models.Model):
    """One account at one provider: `(issuer, subject)` is the provider's stable key for a person
    (`sub`), never the email or username, which can change or be reassigned. A portal account is
    linked to at most one subject per provider, and only ever by its first sign-in: an existing
    local account is never linked silently (portal/identity/services.py)."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="external_identities"
    )
    issuer = models.CharField(max_length=255)
    subject = models.CharField(max_length=255)
    created_at = models.DateTimeField(default=timezone.now)
    last_sign_in = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name_plural = "external identities"
        constraints = [
            models.UniqueConstraint(fields=["issuer", "subject"], name="identity_subject_unique"),
            models.UniqueConstraint(fields=["issuer", "user"], name="identity_user_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.user} = {self.subject} at {self.issuer}"
