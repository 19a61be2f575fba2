"""The sign-in pages with and without OpenID Connect configured (Django's test client; the
discovery document comes from the real test provider `make services` starts)."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth import authenticate
from django.test import Client, RequestFactory

from tests.factories import UserFactory
from tests.portal.oidc_provider import PROVIDER_NAME, enable_oidc

pytestmark = pytest.mark.django_db


def test_without_configuration_nothing_changes(client):
    page = client.get("/accounts/login/")
    assert b"Sign in with" not in page.content and b'name="password"' in page.content
    assert client.get("/oidc/authenticate/").status_code == 404
    assert client.get("/oidc/callback/?code=a&state=b").status_code == 404


def test_the_login_page_offers_the_institution_beside_passwords(client, settings, monkeypatch):
    facts = enable_oidc(settings, monkeypatch)
    page = client.get("/accounts/login/?next=/review/")
    assert f"Sign in with {PROVIDER_NAME}".encode() in page.content
    assert b'href="/oidc/authenticate/?next=%2Freview%2F"' in page.content
    assert b'name="password"' in page.content
    # The provider's origin joins form-action (beside the notebooks' hub: docs/notebooks-hub.md).
    form_action = next(
        d
        for d in page.headers["Content-Security-Policy"].split(";")
        if d.strip().startswith("form-action ")
    ).split()
    assert form_action[1] == "'self'" and facts["OIDC_ISSUER"] in form_action


@pytest.fixture
def provider(settings, monkeypatch):
    """The real test provider: its discovery document is fetched (marks the test `oidc`)."""
    return enable_oidc(settings, monkeypatch)


def test_sign_in_starts_with_state_nonce_and_a_pkce_challenge(client, provider):
    facts = provider
    answer = client.get("/oidc/authenticate/?next=/review/")

    assert answer.status_code == 302
    target = urlsplit(answer["Location"])
    query = {key: values[0] for key, values in parse_qs(target.query).items()}
    assert f"{target.scheme}://{target.netloc}{target.path}" == f"{facts['OIDC_ISSUER']}/auth"
    assert query["client_id"] == facts["OIDC_CLIENT_ID"]
    assert query["code_challenge_method"] == "S256" and len(query["code_challenge"]) == 43
    assert query["scope"] == "openid email profile groups"
    kept = client.session["oidc_states"][query["state"]]
    assert kept["nonce"] == query["nonce"] and len(kept["code_verifier"]) >= 43


def test_a_callback_this_browser_did_not_start_gets_a_clear_page(client, settings, monkeypatch):
    enable_oidc(settings, monkeypatch)
    client.get("/oidc/authenticate/")  # a state of its own in the session
    answer = client.get("/oidc/callback/?code=stolen&state=not-ours")
    assert answer.status_code == 400
    assert b"This sign-in could not be completed" in answer.content
    # A browser with no sign-in started at all.
    answer = Client().get("/oidc/callback/?code=stolen&state=not-ours")
    assert answer.status_code == 400
    assert b"This sign-in could not be completed" in answer.content


def test_the_providers_own_refusal_is_shown(client, settings, monkeypatch):
    enable_oidc(settings, monkeypatch)
    answer = client.get("/oidc/callback/?error=access_denied&error_description=no+thanks&state=s")
    assert answer.status_code == 400
    assert f"{PROVIDER_NAME} refused the sign-in".encode() in answer.content
    assert b"access_denied (no thanks)" in answer.content


def test_a_provider_that_cannot_be_discovered_gets_a_clear_page(client, settings, monkeypatch):
    enable_oidc(settings, monkeypatch)
    settings.OIDC_ISSUER = settings.OIDC_ISSUER.replace("127.0.0.1", "localhost")  # not its name
    answer = client.get("/oidc/authenticate/")
    assert answer.status_code == 503
    assert f"{PROVIDER_NAME} cannot be reached".encode() in answer.content


def test_local_passwords_can_be_switched_off(client, settings, monkeypatch):
    enable_oidc(settings, monkeypatch, local_login=False)
    user = UserFactory(username="rosalind")

    page = client.get("/accounts/login/")
    assert f"Sign in with {PROVIDER_NAME}".encode() in page.content
    assert b'name="password"' not in page.content
    refused = client.post("/accounts/login/", {"username": "rosalind", "password": "pw-for-tests"})
    assert refused.status_code == 403 and b"Passwords are switched off" in refused.content
    assert "_auth_user_id" not in client.session
    # Not only the page: no password is checked anywhere (admin, API token).
    request = RequestFactory().post("/api/v1/auth/token/")
    assert authenticate(request, username="rosalind", password="pw-for-tests") is None
    assert user.check_password("pw-for-tests")
