"""The provider's settings from the environment (docs/configuration.md). Imported by
portal/settings.py, so it imports nothing of Django's apps."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlparse

from .keys import read_key

SCOPES = {
    "openid": "Sign you in",
    "profile": "Your username and name",
    "email": "Your email address",
}


def provider_settings(*, var_dir: Path, csp: dict[str, str], https: bool) -> dict[str, object]:
    """django-oauth-toolkit's settings (OIDC on, RS256 with the key of PORTAL_PROVIDER_KEY_FILE,
    the portal's claims) and the CSP: once someone signs in on the portal's login form on their
    way to the hub, the provider's redirect back to the hub follows that form's POST, so the
    hub's origin joins `form-action`. `https`: the portal is served over https (production), so
    the hub's redirect must be too."""
    key_file = Path(
        os.environ.get("PORTAL_PROVIDER_KEY_FILE", "").strip() or var_dir / "provider-key.pem"
    )
    hub_url = os.environ.get("JUPYTERHUB_URL", "").strip() or "http://127.0.0.1:8081"
    origin = "{0.scheme}://{0.netloc}".format(urlparse(hub_url))
    return {
        "PORTAL_PROVIDER_KEY_FILE": key_file,
        "OAUTH2_PROVIDER": {
            "OIDC_ENABLED": True,
            "OIDC_RSA_PRIVATE_KEY": read_key(key_file),
            "OAUTH2_VALIDATOR_CLASS": "portal.provider.validator.PortalOAuth2Validator",
            "SCOPES": SCOPES,
            "DEFAULT_SCOPES": ["openid"],
            # Codes live a minute; tokens as long as a working day (the hub keeps its own
            # cookie after sign-in and asks again when that runs out).
            "AUTHORIZATION_CODE_EXPIRE_SECONDS": 60,
            "ACCESS_TOKEN_EXPIRE_SECONDS": int(
                os.environ.get("PORTAL_PROVIDER_TOKEN_SECONDS", "36000")
            ),
            # OAuth 2.0 Security BCP (RFC 9700) throughout: PKCE with S256 only, no implicit or
            # password grant, tokens only in headers and hashed at rest, `iss` in the
            # authorization response, refresh-token replay revokes the family; plain-http
            # redirects only while the portal itself is served over http (make run).
            "PKCE_REQUIRED": True,
            "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
            "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
            "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
            "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
            "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,
            "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,
            "REFRESH_TOKEN_REUSE_PROTECTION": True,
            "ALLOWED_REDIRECT_URI_SCHEMES": ["https"] if https else ["http", "https"],
            # /o/logout/ (RP-initiated logout, portal/provider/views.py): asks before it signs
            # anyone out, and returns only to a client's registered post-logout address.
            "OIDC_RP_INITIATED_LOGOUT_ENABLED": True,
            "OIDC_RP_INITIATED_LOGOUT_ALWAYS_PROMPT": True,
        },
        "PORTAL_CSP": {**csp, "form-action": f"{csp['form-action']} {origin}"},
    }
