"""Every write to API tokens: create (personal or account), revoke one, revoke all of a person's,
record a use. Only the key's SHA-256 is stored; the key is returned once."""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
import unicodedata
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from allocations.transitions import record_event
from core.errors import Invalid, NotFound

from .models import PersonalToken, password_fingerprint

PREFIX = "pat_"
#: The lifetimes a person may choose (days); one home for the page and the service.
EXPIRY_DAYS = (7, 30, 90, 365)
DEFAULT_EXPIRY_DAYS = 90
#: At most one write per token per this interval records its last use.
TOUCH_EVERY = dt.timedelta(seconds=60)
#: Live personal tokens one person may hold at once (a runaway script cannot fill the table).
MAX_ACTIVE = 50
#: Live account tokens one person may hold: each sign-in through POST auth/token/ makes a new
#: one (only a hash is kept, so none can be handed out twice) and revokes the oldest beyond this.
MAX_ACCOUNT_TOKENS = 10
ACCOUNT_TOKEN_NAME = "Account token (from sign-in / portal login)"
#: Invisible characters that reorder text: a name could show as another name.
_BIDI = set("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def key_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def _name_errors(name: str) -> list[str]:
    if not name:
        return ["Give the token a name, e.g. the laptop or script that will use it."]
    if any(unicodedata.category(c) in ("Cc", "Cs") or c in _BIDI for c in name):
        return ["No control characters (such as NUL, a tab or a line break) in a name."]
    limit = PersonalToken._meta.get_field("name").max_length
    if limit is not None and len(name) > limit:
        return ["At most 80 characters."]
    return []


def _live(user: Any, kind: str, now: dt.datetime) -> QuerySet[PersonalToken]:
    return PersonalToken.objects.filter(user=user, kind=kind, revoked_at=None, expires_at__gt=now)


def _make(
    *, user: Any, kind: str, name: str, now: dt.datetime, lifetime: dt.timedelta
) -> tuple[PersonalToken, str]:
    key = PREFIX + secrets.token_urlsafe(32)
    token = PersonalToken.objects.create(
        user=user,
        kind=kind,
        name=name,
        key_hash=key_hash(key),
        prefix=key[:10],
        password_fingerprint=password_fingerprint(user),
        created_at=now,
        expires_at=now + lifetime,
    )
    return token, key


@transaction.atomic
def token_create(
    *, user: Any, name: str, days: int = DEFAULT_EXPIRY_DAYS
) -> tuple[PersonalToken, str]:
    """Make a personal token for `user` (only for themselves) and return it with its key, which
    is never stored and cannot be shown again. Invalid per field, nothing written, for a
    blank or long name or one with control characters, a lifetime not in EXPIRY_DAYS, or too
    many live tokens. Audited."""
    name = (name or "").strip()
    errors: dict[str, list[str]] = {}
    if name_errors := _name_errors(name):
        errors["name"] = name_errors
    if days not in EXPIRY_DAYS:
        errors["days"] = [f"Choose one of {', '.join(map(str, EXPIRY_DAYS))} days."]
    now = timezone.now()
    live = _live(user, PersonalToken.Kind.PERSONAL, now).count()
    if live >= MAX_ACTIVE:
        errors["name"] = [f"You have {live} live tokens; revoke some first."]
    if errors:
        raise Invalid(errors)
    token, key = _make(
        user=user,
        kind=PersonalToken.Kind.PERSONAL,
        name=name,
        now=now,
        lifetime=dt.timedelta(days=days),
    )
    record_event(
        token,
        actor=user,
        from_state="",
        to_state="active",
        comment=f"API token \u201c{name}\u201d ({token.prefix}\u2026) created, "
        f"expires {token.expires_at:%Y-%m-%d %H:%M} UTC.",
    )
    return token, key


@transaction.atomic
def account_token_create(*, user: Any) -> tuple[PersonalToken, str]:
    """A new account token for `user`, who has just proved their password (POST auth/token/),
    living PORTAL_ACCOUNT_TOKEN_DAYS; returns it with its key (shown once). The oldest live
    account tokens beyond MAX_ACCOUNT_TOKENS are revoked (audited); the user's row is locked
    so that two sign-ins at once cannot leave more than that live. Making it writes no audit
    event: it is a sign-in, which django-axes' access log records (and every revocation is
    audited)."""
    get_user_model().objects.select_for_update().filter(pk=user.pk).values_list("pk").first()
    now = timezone.now()
    token, key = _make(
        user=user,
        kind=PersonalToken.Kind.ACCOUNT,
        name=ACCOUNT_TOKEN_NAME,
        now=now,
        lifetime=dt.timedelta(days=settings.PORTAL_ACCOUNT_TOKEN_DAYS),
    )
    surplus = _live(user, PersonalToken.Kind.ACCOUNT, now).order_by("-created_at", "-id")[
        MAX_ACCOUNT_TOKENS:
    ]
    for old in surplus:
        _revoke(old, by=user, why=f"more than {MAX_ACCOUNT_TOKENS} live account tokens")
    return token, key


def _revoke(token: PersonalToken, *, by: Any, why: str = "") -> None:
    was = token.status
    token.revoked_at = timezone.now()
    token.save(update_fields=["revoked_at"])
    record_event(
        token,
        actor=by,
        from_state=was,
        to_state="revoked",
        comment=f"API token \u201c{token.name}\u201d ({token.prefix}\u2026) revoked"
        + (f": {why}." if why else "."),
    )


@transaction.atomic
def token_revoke(*, token_id: int, by: Any) -> PersonalToken:
    """Revoke one of `by`'s own tokens, of either kind (another person's is a 404, as if it did
    not exist). Revoking a revoked token changes nothing. Audited."""
    token = PersonalToken.objects.select_for_update().filter(pk=token_id, user=by).first()
    if token is None:
        raise NotFound("No such token.")
    if token.revoked_at is None:
        _revoke(token, by=by)
    return token


@transaction.atomic
def tokens_revoke_all(*, user: Any, why: str, by: Any = None) -> int:
    """Revoke every live token of `user`, both kinds (their password changed, or the account
    was deactivated: portal/tokens/receivers.py). Idempotent; returns how many it revoked.
    Audited, one event per token, with `why`."""
    now = timezone.now()
    tokens = list(
        PersonalToken.objects.select_for_update().filter(
            user=user, revoked_at=None, expires_at__gt=now
        )
    )
    for token in tokens:
        _revoke(token, by=by, why=why)
    return len(tokens)


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
