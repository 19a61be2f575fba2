"""OpenID Connect settings from the environment (docs/configuration.md). Imported by
portal/settings.py, so it imports nothing of Django's apps. Sign-in through the provider is on
only when OIDC_ISSUER, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET are all set; otherwise nothing
changes (local passwords, as in the demo)."""

from __future__ import annotations

import os
from urllib.parse import urlparse

from django.core.exceptions import ImproperlyConfigured

from ..envconf import env_bool, env_list

REQUIRED = ("OIDC_ISSUER", "OIDC_CLIENT_ID", "OIDC_CLIENT_SECRET")
BACKEND = "portal.identity.backend.OIDCBackend"
PASSWORD_BACKEND = "django.contrib.auth.backends.ModelBackend"


def oidc_settings(*, backends: list[str], csp: dict[str, str]) -> dict[str, object]:
    """Django settings for sign-in: mozilla-django-oidc's own (`OIDC_RP_*`, PKCE, nonce), the
    portal's claim names and role mapping, the authentication backends (the provider's added,
    the password one removed when PORTAL_LOCAL_LOGIN=false) and the CSP (the logout form's
    redirect goes to the provider, so its origin joins `form-action`)."""
    given = {name: os.environ.get(name, "").strip() for name in REQUIRED}
    enabled = all(given.values())
    if any(given.values()) and not enabled:
        missing = ", ".join(name for name, value in given.items() if not value)
        raise ImproperlyConfigured(f"OpenID Connect sign-in needs {missing} as well")
    local_login = env_bool("PORTAL_LOCAL_LOGIN", True)
    if not local_login and not enabled:
        raise ImproperlyConfigured(
            "PORTAL_LOCAL_LOGIN=false needs OpenID Connect sign-in "
            "(OIDC_ISSUER, OIDC_CLIENT_ID, OIDC_CLIENT_SECRET): nobody "
            "could sign in"
        )
    issuer = given["OIDC_ISSUER"].rstrip("/")
    if enabled:
        backends = [b for b in backends if local_login or b != PASSWORD_BACKEND] + [BACKEND]
        origin = "{0.scheme}://{0.netloc}".format(urlparse(issuer))
        csp = {**csp, "form-action": f"{csp['form-action']} {origin}"}
    return {
        "OIDC_ENABLED": enabled,
        "PORTAL_LOCAL_LOGIN": local_login,
        "OIDC_ISSUER": issuer,
        "OIDC_RP_CLIENT_ID": given["OIDC_CLIENT_ID"],
        "OIDC_RP_CLIENT_SECRET": given["OIDC_CLIENT_SECRET"],
        "OIDC_PROVIDER_NAME": os.environ.get("OIDC_PROVIDER_NAME", "").strip()
        or "your institution",
        "OIDC_RP_SCOPES": os.environ.get("OIDC_SCOPES", "").strip() or "openid email profile",
        "OIDC_RP_SIGN_ALGO": os.environ.get("OIDC_SIGN_ALGO", "").strip() or "RS256",
        "OIDC_USERNAME_CLAIM": os.environ.get("OIDC_USERNAME_CLAIM", "").strip()
        or "preferred_username",
        "OIDC_GROUPS_CLAIM": os.environ.get("OIDC_GROUPS_CLAIM", "").strip() or "groups",
        "OIDC_REVIEWER_GROUPS": env_list("OIDC_REVIEWER_GROUPS", []),
        "OIDC_STAFF_GROUPS": env_list("OIDC_STAFF_GROUPS", []),
        # mozilla-django-oidc: state, nonce and PKCE (S256) on every sign-in; the ID token kept
        # in the session for RP-initiated logout; the client authenticates with HTTP Basic.
        "OIDC_USE_NONCE": True,
        "OIDC_USE_PKCE": env_bool("OIDC_USE_PKCE", True),
        "OIDC_PKCE_CODE_CHALLENGE_METHOD": "S256",
        "OIDC_STORE_ID_TOKEN": True,
        "OIDC_TOKEN_USE_BASIC_AUTH": env_bool("OIDC_TOKEN_USE_BASIC_AUTH", True),
        "OIDC_TIMEOUT": int(os.environ.get("OIDC_TIMEOUT", "10")),
        "OIDC_DISCOVERY_TTL": int(os.environ.get("OIDC_DISCOVERY_TTL", "3600")),
        "OIDC_CREATE_USER": True,
        "AUTHENTICATION_BACKENDS": backends,
        "PORTAL_CSP": csp,
    }
