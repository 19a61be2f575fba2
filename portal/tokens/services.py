"""Every write to personal API tokens: create, revoke, record a use."""
from __future__ import annotations

import datetime as dt
import hashlib
import secrets
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.http import Http404
from django.utils import timezone

from allocations.transitions import record_event

from .models import PersonalToken

PREFIX = "pat_"
#: The lifetimes a person may choose (days); one home for the page and the service.
EXPIRY_DAYS = (7, 30, 90, 365)
DEFAULT_EXPIRY_DAYS = 90
#: At most one write per token per this interval records its last use.
TOUCH_EVERY = dt.timedelta(seconds=60)
#: Live tokens one person may hold at once (a runaway script cannot fill the table).
MAX_ACTIVE = 50


def key_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


@transaction.atomic
def token_create(*, user: Any, name: str, days: int = DEFAULT_EXPIRY_DAYS) -> tuple[PersonalToken, str]:
    """Make a token for `user` (only for themselves) and return it with its key, which is
    never stored and cannot be shown again. ValidationError per field for a blank or long
    name, a lifetime not in EXPIRY_DAYS, or too many live tokens. Audited."""
    name = (name or "").strip()
    errors: dict[str, list[str]] = {}
    if not name:
        errors["name"] = ["Give the token a name, e.g. the laptop or script that will use it."]
    elif len(name) > PersonalToken._meta.get_field("name").max_length:
        errors["name"] = ["At most 80 characters."]
    if days not in EXPIRY_DAYS:
        errors["days"] = [f"Choose one of {', '.join(map(str, EXPIRY_DAYS))} days."]
    now = timezone.now()
    live = PersonalToken.objects.filter(user=user, revoked_at=None, expires_at__gt=now).count()
    if live >= MAX_ACTIVE:
        errors["name"] = [f"You have {live} live tokens; revoke some first."]
    if errors:
        raise ValidationError(errors)
    key = PREFIX + secrets.token_urlsafe(32)
    token = PersonalToken.objects.create(
        user=user, name=name, key_hash=key_hash(key), prefix=key[:10], created_at=now,
        expires_at=now + dt.timedelta(days=days))
    record_event(token, actor=user, from_state="", to_state="active",
                 comment=f"API token \u201c{name}\u201d ({token.prefix}\u2026) created, "
                         f"expires {token.expires_at:%Y-%m-%d %H:%M} UTC.")
    return token, key


@transaction.atomic
def token_revoke(*, token_id: int, by: Any) -> PersonalToken:
    """Revoke one of `by`'s own tokens (another person's is a 404, as if it did not exist).
    Revoking a revoked token changes nothing. Audited."""
    token = PersonalToken.objects.select_for_update().filter(pk=token_id, user=by).first()
    if token is None:
        raise Http404("No such token.")
    if token.revoked_at is None:
        was = token.status
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
        record_event(token, actor=by, from_state=was, to_state="revoked",
                     comment=f"API token \u201c{token.name}\u201d ({token.prefix}\u2026) revoked.")
    return token


def token_touch(*, token: PersonalToken, now: dt.datetime | None = None) -> bool:
    """Record that the token was just used, at most once per TOUCH_EVERY: no write at all while
    the stored time is recent, and a conditional update otherwise (two requests at once write
    once). Returns whether it wrote."""
    now = now or timezone.now()
    if token.last_used_at and now - token.last_used_at < TOUCH_EVERY:
        return False
    stale = Q(last_used_at=None) | Q(last_used_at__lt=now - TOUCH_EVERY)
    written = PersonalToken.objects.filter(stale, pk=token.pk).update(last_used_at=now)
    if written:
        token.last_used_at = now
    return bool(written)
