"""One-time form tokens: a form sent twice (Back and Submit again, a double click) makes its
object once. The HTML forms' counterpart of the API's `Idempotency-Key`
(launcher/idempotency.py), kept in the session because a browser form has no header to send.

- Rendering the form `issue`s a random token into a hidden field and into the session, with
  the form's scope and the signed-in user's id.
- The POST `claim`s its token inside `transaction.atomic()`: the session's row is locked and
  read again from the database, so of two POSTs with one token the second waits for the
  first's commit and then sees what it made (`Claim.made`: redirect there instead of making a
  second one).
- The view `spend`s the token with the new object's id in the same transaction, so the object
  and the spent token commit together; a refused POST spends nothing, and the corrected form
  is sent with the same token.
- A token is only good in the session, for the user and on the form it was issued to
  (`Claim.unknown` otherwise): a token copied from someone else's page names nothing here.
  The session keeps the newest `KEEP` tokens; an older one is unknown too, never a second
  object.

A POST without a token (a script's) is not guarded. Another tab of the same session whose
response is written while the first POST commits can write the session back as it read it
(sessions are last-writer-wins), which un-spends the token: rare, and left at that.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from django.contrib.sessions.backends.db import SessionStore as DBSessionStore
from django.http import HttpRequest

FIELD = "form_token"
SESSION_KEY = "form_tokens"
KEEP = 20
# Longer than any issued token (`secrets.token_urlsafe(24)` is 32 characters).
MAX_LENGTH = 64


@dataclass(frozen=True)
class Claim:
    """What a POST's token says: `made` (the id of what it made already), `unknown` (not
    issued to this session, user and form, or forgotten), or neither (go ahead, then spend).
    `token` is None when the POST sent none."""

    token: str | None
    made: int | None = None
    unknown: bool = False


def _tokens(data: dict[str, Any]) -> dict[str, list[Any]]:
    tokens = data.get(SESSION_KEY)
    return dict(tokens) if isinstance(tokens, dict) else {}


def issue(request: HttpRequest, *, scope: str) -> str:
    """A new token for a form of `scope` rendered for `request.user`, kept in the session."""
    token = secrets.token_urlsafe(24)
    tokens = _tokens(dict(request.session.items()))
    tokens[token] = [scope, request.user.pk, None]
    request.session[SESSION_KEY] = dict(list(tokens.items())[-KEEP:])
    return token


def _fresh(request: HttpRequest) -> dict[str, list[Any]]:
    """The session's tokens as committed, its row locked until the transaction ends (a
    database-backed session; any other is read as it was loaded)."""
    session = request.session
    if isinstance(session, DBSessionStore) and session.session_key:
        row = (
            session.model.objects.select_for_update()
            .filter(session_key=session.session_key)
            .first()
        )
        tokens = _tokens(session.decode(row.session_data) if row else {})
        request.session[SESSION_KEY] = tokens  # what the response writes back
        return tokens
    return _tokens(dict(session.items()))


def claim(request: HttpRequest, *, scope: str, token: str | None) -> Claim:
    """Read `token` of a POSTed form of `scope`. Call inside `transaction.atomic()` and
    `spend` it in the same transaction: the session's row stays locked until then."""
    if not token:
        return Claim(token=None)
    entry = _fresh(request).get(token)
    if entry is None or entry[:2] != [scope, request.user.pk]:
        return Claim(token=token, unknown=True)
    return Claim(token=token, made=entry[2])


def spend(request: HttpRequest, claim: Claim, *, made: int) -> None:
    """Record that `claim`'s token made the object `made`, in the session's row now (inside the
    claim's transaction), so a second POST with the token finds it."""
    if claim.token is None:
        return
    tokens = _tokens(dict(request.session.items()))
    scope, user_id, _ = tokens[claim.token]
    tokens[claim.token] = [scope, user_id, made]
    request.session[SESSION_KEY] = tokens
    request.session.save()
