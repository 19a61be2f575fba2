"""`Authorization: Token <key>` for both kinds of token: DRF's own (what POST auth/token/
returns, for the demo and scripts) and personal tokens (`pat_...`, made on /account/tokens/).
An expired or revoked personal token is a 401 whose message says so."""
from __future__ import annotations

from django.utils import timezone
from django.utils.formats import date_format
from rest_framework import authentication, exceptions

from . import selectors, services


class TokenAuthentication(authentication.TokenAuthentication):
    """DRF's TokenAuthentication (same header, same `WWW-Authenticate: Token`), extended
    through its documented hook, `authenticate_credentials`."""

    def authenticate_credentials(self, key):
        if not key.startswith(services.PREFIX):
            return super().authenticate_credentials(key)
        token = selectors.token_for_key(key)
        if token is None:
            raise exceptions.AuthenticationFailed("Invalid token.")
        if token.revoked_at is not None:
            raise exceptions.AuthenticationFailed(
                f"This API token (\u201c{token.name}\u201d) was revoked on "
                f"{_when(token.revoked_at)}. Make a new one on /account/tokens/.")
        now = timezone.now()
        if token.is_expired(now):
            raise exceptions.AuthenticationFailed(
                f"This API token (\u201c{token.name}\u201d) expired on {_when(token.expires_at)}. "
                "Make a new one on /account/tokens/.")
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("User inactive or deleted.")
        services.token_touch(token=token, now=now)
        return token.user, token


def _when(moment) -> str:
    return date_format(timezone.localtime(moment), "Y-m-d H:i T")
