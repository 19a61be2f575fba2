"""Notification preferences: each person chooses for themselves."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..models import NotificationPreference
from .errors import PolicyError

if TYPE_CHECKING:
    from django.contrib.auth.models import User as AuthUser


def preference_set(*, user: AuthUser, usage_alerts: str) -> NotificationPreference:
    """One email per usage alert (`each`) or a weekly digest (`weekly`), for `user` only."""
    if usage_alerts not in NotificationPreference.Usage.values:
        raise PolicyError(
            f"Choose one of {', '.join(NotificationPreference.Usage.values)}.", field="usage_alerts"
        )
    preference, _ = NotificationPreference.objects.update_or_create(
        user=user, defaults={"usage_alerts": usage_alerts}
    )
    return preference
