"""Small helpers that read settings from the environment with clear errors."""

from __future__ import annotations

import os
from urllib.parse import parse_qs, unquote, urlparse

from django.core.exceptions import ImproperlyConfigured


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name} must be true or false, got {raw!r}")


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if not raw:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


_EMAIL_BACKENDS = {
    "console": "django.core.mail.backends.console.EmailBackend",
    "locmem": "django.core.mail.backends.locmem.EmailBackend",
    "dummy": "django.core.mail.backends.dummy.EmailBackend",
    "smtp": "django.core.mail.backends.smtp.EmailBackend",
    "smtps": "django.core.mail.backends.smtp.EmailBackend",
    "submission": "django.core.mail.backends.smtp.EmailBackend",
}


def email_config(url: str) -> dict[str, object]:
    """Turn EMAIL_URL (console://, locmem://, smtp://user:pass@host:587/?tls=1) into settings."""
    parsed = urlparse(url)
    if parsed.scheme not in _EMAIL_BACKENDS:
        raise ImproperlyConfigured(
            f"EMAIL_URL scheme {parsed.scheme!r} is not one of {sorted(_EMAIL_BACKENDS)}"
        )
    options = {key: values[-1] for key, values in parse_qs(parsed.query).items()}
    config: dict[str, object] = {"EMAIL_BACKEND": _EMAIL_BACKENDS[parsed.scheme]}
    if parsed.scheme in {"smtp", "smtps", "submission"}:
        config.update(
            EMAIL_HOST=parsed.hostname or "localhost",
            EMAIL_PORT=parsed.port or (465 if parsed.scheme == "smtps" else 587),
            EMAIL_HOST_USER=unquote(parsed.username or ""),
            EMAIL_HOST_PASSWORD=unquote(parsed.password or ""),
            EMAIL_USE_SSL=parsed.scheme == "smtps",
            EMAIL_USE_TLS=parsed.scheme == "submission" or options.get("tls") in {"1", "true"},
            EMAIL_TIMEOUT=10,
        )
    return config
