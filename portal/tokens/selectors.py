"""Reads of API tokens."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.db.models import Q, QuerySet
from django.utils import timezone

from .models import PersonalToken
from .services import key_hash

#: How long a revoked or expired token stays in the person's list (each password sign-in makes
#: an account token: the list would grow without end). Its audit events stay.
LISTED_AFTER_END = dt.timedelta(days=90)


def user_tokens(user: Any) -> QuerySet[PersonalToken]:
    """The person's own tokens of both kinds, newest first: the live ones and those that were
    revoked or expired in the last LISTED_AFTER_END."""
    since = timezone.now() - LISTED_AFTER_END
    return PersonalToken.objects.filter(
        Q(revoked_at=None, expires_at__gt=since) | Q(revoked_at__gt=since), user=user
    )


def token_for_key(key: str) -> PersonalToken | None:
    """The token with this key (any kind, any state), with its user; None if there is none.
    Any string is looked up by its hash (keys migrated from DRF's tokens have no `pat_`)."""
    return PersonalToken.objects.select_related("user").filter(key_hash=key_hash(key)).first()
