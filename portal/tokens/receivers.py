"""Tokens end with the password they were made under and with the account: a receiver on the
user model revokes every live token of a user whose password changed or who was deactivated
(docs/architecture.md, "Signals"; docs/security.md, "Tokens").

This is the bookkeeping (the tokens show as revoked, audited, and stay revoked if the account
is reactivated). The rule itself is also enforced where a token is checked
(portal/tokens/authentication.py: the password fingerprint and `is_active`), so a write that
skips `save()` (a queryset `update()`, SQL) cannot keep a token alive."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db.models.signals import post_save, pre_save
from django.dispatch import receiver

from . import services

_WATCHED = {"password", "is_active"}


@receiver(pre_save, sender=settings.AUTH_USER_MODEL, dispatch_uid="tokens.user_before")
def _remember(sender: Any, instance: Any, update_fields=None, raw: bool = False, **kwargs) -> None:
    """Read the stored password hash and `is_active` before a save that may change them."""
    instance._tokens_before = None
    if (
        raw
        or instance.pk is None
        or (update_fields is not None and not _WATCHED & set(update_fields))
    ):
        return
    instance._tokens_before = (
        sender._default_manager.filter(pk=instance.pk).values_list("password", "is_active").first()
    )


@receiver(post_save, sender=settings.AUTH_USER_MODEL, dispatch_uid="tokens.user_after")
def _revoke_on_change(
    sender: Any, instance: Any, created: bool, raw: bool = False, **kwargs
) -> None:
    before = getattr(instance, "_tokens_before", None)
    instance._tokens_before = None
    if raw or created or before is None:
        return
    password, active = before
    if password != instance.password:
        services.tokens_revoke_all(user=instance, why="the password changed")
    elif active and not instance.is_active:
        services.tokens_revoke_all(user=instance, why="the account was deactivated")
