"""The real OpenID Connect provider `make services` starts (scripts/services/oidc.sh): its facts
from services.env, settings that turn sign-in on for one test, and its login form."""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path

import pytest

from allocations.demo import read_services_env
from portal.identity import discovery
from portal.identity.conf import oidc_settings

PROVIDER_NAME = "Test University"
START_HINT = "run `make services` (bash scripts/services.sh) as root first"


def provider_facts() -> dict[str, str]:
    facts = read_services_env()
    if "OIDC_ISSUER" not in facts:
        pytest.fail(
            f"services.env has no OIDC_ISSUER: the test provider is not set up; {START_HINT}"
        )
    return facts


def enable_oidc(settings, monkeypatch, *, local_login: bool = True) -> dict[str, str]:
    """Turn sign-in through the test provider on, as the environment would in production."""
    facts = provider_facts()
    env = {
        "OIDC_ISSUER": facts["OIDC_ISSUER"],
        "OIDC_CLIENT_ID": facts["OIDC_CLIENT_ID"],
        "OIDC_CLIENT_SECRET": facts["OIDC_CLIENT_SECRET"],
        "OIDC_PROVIDER_NAME": PROVIDER_NAME,
        "OIDC_SCOPES": "openid email profile groups",
        "OIDC_REVIEWER_GROUPS": "portal-reviewers",
        "OIDC_STAFF_GROUPS": "portal-staff",
        "PORTAL_LOCAL_LOGIN": "true" if local_login else "false",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    computed = oidc_settings(
        backends=list(settings.AUTHENTICATION_BACKENDS), csp=dict(settings.PORTAL_CSP)
    )
    for name, value in computed.items():
        setattr(settings, name, value)
    discovery.forget()
    return facts


@contextmanager
def groups_changed(facts: dict[str, str], account: str, groups: list[str]):
    """Change someone's groups at the provider (it reads its accounts at every sign-in), and
    put them back afterwards."""
    path = Path(facts["OIDC_ACCOUNTS_FILE"])
    original = path.read_text()
    accounts = json.loads(original)
    accounts[account]["groups"] = groups
    path.write_text(json.dumps(accounts))
    try:
        yield
    finally:
        path.write_text(original)


def sign_in_at_provider(page, live_server, account: str, password: str | None = None) -> None:
    """From the portal's login page through the provider's login form."""
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_role("link", name=f"Sign in with {PROVIDER_NAME}").click()
    page.get_by_label("Account").fill(account)
    page.get_by_label("Password").fill(password or f"{account}-pw")
    page.get_by_role("button", name="Sign in").click()
