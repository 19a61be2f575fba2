"""The provider's endpoints, from its discovery document
(`<OIDC_ISSUER>/.well-known/openid-configuration`), fetched when first needed and kept for
OIDC_DISCOVERY_TTL seconds per process. Lazily, so the portal starts (and password sign-in
works) while the provider is down; a sign-in then gets a clear page, not a 500."""

from __future__ import annotations

import logging
import threading
import time

import requests
from django.conf import settings

log = logging.getLogger(__name__)
ENDPOINTS = ("authorization_endpoint", "token_endpoint", "userinfo_endpoint", "jwks_uri")

_lock = threading.Lock()
_cache: dict[str, tuple[float, dict]] = {}


class ProviderUnavailable(Exception):
    """The discovery document could not be fetched or is not the configured issuer's."""


def metadata() -> dict:
    """The configured issuer's discovery document (cached). Its `issuer` must be the configured
    one exactly (OpenID Connect Discovery 1.0, section 4.3), and it must name the endpoints the
    code flow needs."""
    issuer = settings.OIDC_ISSUER
    now = time.monotonic()
    with _lock:
        cached = _cache.get(issuer)
        if cached and now - cached[0] < settings.OIDC_DISCOVERY_TTL:
            return cached[1]
    url = f"{issuer}/.well-known/openid-configuration"
    try:
        response = requests.get(url, timeout=settings.OIDC_TIMEOUT)
        response.raise_for_status()
        document = response.json()
    except (requests.RequestException, ValueError) as exc:
        log.warning("OpenID Connect discovery at %s failed: %s", url, exc)
        raise ProviderUnavailable(f"{url}: {exc}") from exc
    if document.get("issuer") != issuer:
        raise ProviderUnavailable(f"{url} names issuer {document.get('issuer')!r}, not {issuer!r}")
    missing = [name for name in ENDPOINTS if not document.get(name)]
    if missing:
        raise ProviderUnavailable(f"{url} lacks {', '.join(missing)}")
    with _lock:
        _cache[issuer] = (now, document)
    return document


def forget() -> None:
    """Drop the cached documents (a provider that rotated its endpoints; tests)."""
    with _lock:
        _cache.clear()
