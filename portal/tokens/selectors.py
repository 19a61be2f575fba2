"""Reads of personal API tokens."""
from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from .models import PersonalToken
from .services import PREFIX, key_hash


def user_tokens(user: Any) -> QuerySet[PersonalToken]:
    """The person's own tokens, newest first (revoked and expired ones included)."""
    return PersonalToken.objects.filter(user=user)


def token_for_key(key: str) -> PersonalToken | None:
    """The token with this key (any state), with its user; None if there is none."""
    if not key.startswith(PREFIX):
        return None
    return PersonalToken.objects.select_related("user").filter(key_hash=key_hash(key)).first()
