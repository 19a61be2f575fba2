"""An API token, of either kind: only the SHA-256 of its key is stored; the key is shown once.

- `personal`: named by its owner on /account/tokens/, with the lifetime they chose.
- `account`: what `POST /api/v1/auth/token/` (and so `portal login` with a password) returns,
  named by the portal, living `PORTAL_ACCOUNT_TOKEN_DAYS`.

Both die with the password they were made under (`password_fingerprint`) and are listed and
revoked on /account/tokens/ (docs/security.md, "Tokens")."""

from __future__ import annotations

import hashlib
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.crypto import constant_time_compare


def password_fingerprint(user: Any) -> str:
    """A fingerprint of the user's stored password hash. Any new password (and any rehash: a
    new salt) gives another one, so a token made before the change no longer matches it.
    A hash of a salted hash tells nothing the hash itself does not."""
    return hashlib.sha256(f"portal.tokens:{user.password}".encode()).hexdigest()


class PersonalToken(models.Model):
    class Kind(models.TextChoices):
        PERSONAL = "personal", "Personal token"
        ACCOUNT = "account", "Account token"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="personal_tokens"
    )
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.PERSONAL)
    name = models.CharField(max_length=80)
    # The key is `pat_` + 43 random URL-safe characters (256 bits): a plain SHA-256 is enough
    # (no salt or slow hash: nothing to guess), and it makes the lookup one indexed equality.
    key_hash = models.CharField(max_length=64, unique=True)
    # The first characters of the key, to tell tokens apart in the list (not secret).
    prefix = models.CharField(max_length=12)
    # password_fingerprint(user) when the token was made: a password change ends the token.
    password_fingerprint = models.CharField(max_length=64, default="", editable=False)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.user}: {self.name} ({self.prefix}…)"

    @property
    def is_account(self) -> bool:
        return self.kind == self.Kind.ACCOUNT

    def is_expired(self, now=None) -> bool:
        return self.expires_at <= (now or timezone.now())

    def matches_password(self) -> bool:
        """Whether the owner's password is still the one this token was made under."""
        return constant_time_compare(self.password_fingerprint, password_fingerprint(self.user))

    @property
    def status(self) -> str:
        if self.revoked_at:
            return "revoked"
        return "expired" if self.is_expired() else "active"
