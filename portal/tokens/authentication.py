"""`Authorization: Token <key>` for every API token: account tokens (what POST auth/token/
returns) and personal tokens (made on /account/tokens/), both stored as a SHA-256 only.
A revoked or expired token, one made before the password changed, or one of an inactive user
is a 401 whose message says which."""

from __future__ import annotations

from django.utils import timezone
from django.utils.formats import date_format
from rest_framework import authentication, exceptions

from . import selectors, services
from .models import PersonalToken

_AGAIN = {
    PersonalToken.Kind.PERSONAL.value: "Make a new one on /account/tokens/.",
    PersonalToken.Kind.ACCOUNT.value: "Log in again (`portal login`, or POST /api/v1/auth/token/), or "
    "make a personal token on /account/tokens/.",
}


class TokenAuthentication(authentication.TokenAuthentication):
    """DRF's TokenAuthentication (same header, same `WWW-Authenticate: Token`), extended
    through its documented hook, `authenticate_credentials`; DRF's own Token model is not used."""

    def authenticate_credentials(self, key):
        token = selectors.token_for_key(key)
        if token is None:
            raise exceptions.AuthenticationFailed("Invalid token.")
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("User inactive or deleted.")
        what = (
            "This account token"
            if token.is_account
            else f"This API token (\u201c{token.name}\u201d)"
        )
        again = _AGAIN[str(token.kind)]
        if token.revoked_at is not None:
            raise exceptions.AuthenticationFailed(
                f"{what} was revoked on {_when(token.revoked_at)}. {again}"
            )
        now = timezone.now()
        if token.is_expired(now):
            raise exceptions.AuthenticationFailed(
                f"{what} expired on {_when(token.expires_at)}. {again}"
            )
        if not token.matches_password():
            raise exceptions.AuthenticationFailed(
                f"{what} was made before the account's password changed. {again}"
            )
        services.token_touch(token=token, now=now)
        return token.user, token


def _when(moment) -> str:
    return date_format(timezone.localtime(moment), "Y-m-d H:i T")
