"""The authentication backend for the provider: mozilla-django-oidc's code flow (state, nonce,
PKCE checked by its views), extended through its documented override points with what it leaves
to the relying party: endpoints from discovery, the ID token's issuer and audience, the userinfo
`sub` matched to the ID token's, and the portal's own account rules (services.py)."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import SuspiciousOperation
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.utils import import_from_settings

from . import discovery, services

# Read from discovery when a callback is handled, not from settings (see get_settings).
DISCOVERED = {
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
}


class OIDCBackend(OIDCAuthenticationBackend):
    """Signs in only from the callback (the one caller that passes a `nonce`); a password
    sign-in passes through untouched, without contacting the provider."""

    def get_user(self, user_id):
        """The session's user, refused once inactive (as Django's ModelBackend refuses it)."""
        user = super().get_user(user_id)
        return user if user is not None and user.is_active else None

    @staticmethod
    def get_settings(attr, *args):
        if attr in DISCOVERED:
            return ""  # filled in by authenticate(), which is the only code that uses them
        return import_from_settings(attr, *args)

    def authenticate(self, request, **kwargs):
        if request is None or "nonce" not in kwargs:
            return None
        document = discovery.metadata()  # ProviderUnavailable: the callback's clear page
        for attr, key in DISCOVERED.items():
            setattr(self, attr, document[key])
        return super().authenticate(request, **kwargs)

    def verify_token(self, token, **kwargs):
        """The library checks signature, expiry and nonce; the ID token must also come from
        the configured issuer and be meant for this client."""
        payload = super().verify_token(token, **kwargs)
        audience = payload.get("aud")
        audiences = [audience] if isinstance(audience, str) else list(audience or [])
        if payload.get("iss") != settings.OIDC_ISSUER:
            raise SuspiciousOperation(f"ID token issuer {payload.get('iss')!r} is not ours")
        if self.OIDC_RP_CLIENT_ID not in audiences:
            raise SuspiciousOperation(f"ID token audience {audiences!r} is not this client")
        return payload

    def get_userinfo(self, access_token, id_token, payload):
        """OpenID Connect Core 5.3.2: the userinfo `sub` must be the ID token's."""
        info = super().get_userinfo(access_token, id_token, payload)
        if str(info.get("sub")) != str(payload.get("sub")):
            raise SuspiciousOperation("userinfo sub differs from the ID token's")
        return info

    def get_or_create_user(self, access_token, id_token, payload):
        info = self.get_userinfo(access_token, id_token, payload)
        return services.identity_sign_in(issuer=settings.OIDC_ISSUER, claims={**payload, **info})
