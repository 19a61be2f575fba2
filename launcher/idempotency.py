"""Idempotent launches: an `Idempotency-Key` header on POST jobs/, sweeps/ and notebooks/ (as the
Stripe API has one, and the IETF draft "The Idempotency-Key HTTP Header Field" describes).

A client that sends a launch and loses the answer (a timeout, a dropped connection) cannot know
whether it launched; sent again with the same key, the request returns what the first one
created (201, the same object as it is now, with `Idempotent-Replayed: true`) instead of
launching a second job, sweep or session. The rules (docs/api.md, "Idempotent launches"):

- a key is the caller's own: 1 to 255 visible ASCII characters (a UUID is a good one); another
  user's identical key is another key;
- it holds for 24 hours (`TTL`) from the launch it created; after that it is new again;
- it belongs to one request: the same key with another body, or on another endpoint, is a 409
  that says so, and nothing is launched;
- only a launch that was made records its key, in the same transaction as the object
  (`record`, called by the services): a refused launch (400, 409) keeps no key, so the
  corrected request can be sent with the same one;
- two requests with one key at once: the database's unique (user, key) lets one commit; the
  other's transaction is rolled back (nothing of it is kept) and it answers with the first's
  object (`KeyRaced`, `launch_once`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from django.db import IntegrityError, transaction
from django.utils import timezone

from core.errors import Conflict, Invalid

from .models import IdempotencyKey

HEADER = "Idempotency-Key"
TTL = dt.timedelta(hours=24)
_KEY = re.compile(r"[\x21-\x7e]{1,255}")
#: The header's rule, as the OpenAPI document states it.
KEY_PATTERN = r"^[\x21-\x7e]{1,255}$"
T = TypeVar("T")


@dataclass(frozen=True)
class Idempotency:
    """A request's key: whose, which, and the hash of the endpoint and body it came with."""

    user_id: int
    key: str
    request_hash: str


class KeyReused(Conflict):
    """The key was used, within its 24 hours, for another request (HTTP 409)."""


class KeyRaced(Exception):
    """Another request with this key committed its launch first (this one is rolled back)."""


def _canonical(body: Any) -> str:
    if hasattr(body, "lists"):  # a QueryDict (an empty body)
        body = {key: values for key, values in body.lists()}
    return json.dumps(
        body, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False, default=str
    )


def request_key(*, user: Any, key: str | None, scope: str, body: Any) -> Idempotency | None:
    """The request's idempotency, or None when it sent no key. `scope` names the endpoint
    ("jobs", "sweeps", "notebooks"): the same key on another one is another request. A
    malformed key is Invalid (400 on `Idempotency-Key`)."""
    if key is None:
        return None
    if not _KEY.fullmatch(key):
        raise Invalid(
            f"An {HEADER} is 1 to 255 visible ASCII characters (no spaces), e.g. a UUID.",
            field=HEADER,
        )
    digest = hashlib.sha256(f"{scope}\n{_canonical(body)}".encode()).hexdigest()
    return Idempotency(user_id=user.pk, key=key, request_hash=digest)


def earlier(idempotency: Idempotency) -> tuple[str, int] | None:
    """(kind, id) of what this key launched within its 24 hours, or None. KeyReused (409) when
    it came with another request."""
    row = IdempotencyKey.objects.filter(
        user_id=idempotency.user_id, key=idempotency.key, created_at__gte=timezone.now() - TTL
    ).first()
    if row is None:
        return None
    if row.request_hash != idempotency.request_hash:
        raise KeyReused(
            f"This {HEADER} was used in the last 24 hours for another request (another body or "
            f"another endpoint), which launched {row.get_kind_display().lower()} #{row.object_id}. "
            "Nothing was launched: send a new key for a new request.",
            kind=row.kind,
            id=row.object_id,
        )
    return row.kind, row.object_id


def record(idempotency: Idempotency | None, *, kind: str, object_id: int) -> None:
    """Remember what the key launched. Call it inside the launch's transaction, after the
    object is created: KeyRaced (which rolls the launch back) when another request with the key
    committed first."""
    if idempotency is None:
        return
    mine = IdempotencyKey.objects.filter(user_id=idempotency.user_id, key=idempotency.key)
    mine.filter(created_at__lt=timezone.now() - TTL).delete()
    try:
        with transaction.atomic():
            IdempotencyKey.objects.create(
                user_id=idempotency.user_id,
                key=idempotency.key,
                kind=kind,
                object_id=object_id,
                request_hash=idempotency.request_hash,
            )
    except IntegrityError:
        raise KeyRaced(idempotency.key) from None


def launch_once(
    idempotency: Idempotency | None, *, launch: Callable[[], T], find: Callable[[str, int], T]
) -> tuple[T, bool]:
    """`(launch(), False)`; or, when the key launched something already, `(find(kind, id),
    True)` without launching. `launch` passes `idempotency` to its service."""
    if idempotency is not None and (done := earlier(idempotency)) is not None:
        return find(*done), True
    try:
        return launch(), False
    except KeyRaced:
        assert idempotency is not None
        done = earlier(idempotency)
        if done is None:  # the other request's row is gone again: cannot happen within a day
            raise
        return find(*done), True


def prune(*, now: dt.datetime | None = None) -> int:
    """Forget the keys past their 24 hours (the beat, hourly). How many were forgotten."""
    deleted, _ = IdempotencyKey.objects.filter(
        created_at__lt=(now or timezone.now()) - TTL
    ).delete()
    return deleted
