"""The portal as an OpenID Connect provider for JupyterHub (portal/provider/, /o/): discovery,
the hub's client registration, the claims, and only active users signed in."""

from __future__ import annotations

import datetime as dt
import io

import pytest
from django.core.management import call_command
from django.utils import timezone
from oauth2_provider.models import AccessToken, get_application_model

from portal.provider.keys import ensure_key

Application = get_application_model()


@pytest.fixture
def provider_key(settings, tmp_path):
    path = tmp_path / "key.pem"
    assert ensure_key(path) and not ensure_key(path)  # made once, then kept
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    settings.OAUTH2_PROVIDER = {
        **settings.OAUTH2_PROVIDER,
        "OIDC_RSA_PRIVATE_KEY": path.read_text(),
    }


def hub_client(**env):
    out = io.StringIO()
    call_command("hub_client", stdout=out, **env)
    return out.getvalue()


def test_discovery_names_the_endpoints_the_hub_uses(client, provider_key):
    answer = client.get("/o/.well-known/openid-configuration")
    assert answer.status_code == 200
    document = answer.json()
    assert document["issuer"] == "http://testserver/o"
    assert document["authorization_endpoint"] == "http://testserver/o/authorize/"
    assert document["userinfo_endpoint"] == "http://testserver/o/userinfo/"
    assert "RS256" in document["id_token_signing_alg_values_supported"]
    assert client.get("/o/.well-known/jwks.json").json()["keys"][0]["kty"] == "RSA"
    # Not the toolkit's application pages: only hub_client registers a client.
    assert client.get("/o/applications/").status_code == 404


def test_hub_client_registers_the_hub_once_and_updates_it(db):
    first = hub_client(client_id="hub", client_secret="s3cret-1", hub_url="http://127.0.0.1:8081/")
    assert first.startswith("created")
    again = hub_client(client_id="hub", client_secret="s3cret-2", hub_url="https://hub.example")
    assert again.startswith("updated")
    app = Application.objects.get()
    assert (
        app.client_id,
        app.client_type,
        app.authorization_grant_type,
        app.skip_authorization,
        app.redirect_uris,
        app.algorithm,
    ) == (
        "hub",
        "confidential",
        "authorization-code",
        True,
        "https://hub.example/hub/oauth_callback",
        "RS256",
    )
    assert app.client_secret != "s3cret-2"  # stored hashed


def test_userinfo_gives_the_username_and_refuses_a_deactivated_user(
    client, db, researcher, provider_key
):
    hub_client(client_id="hub", client_secret="s3cret", hub_url="http://127.0.0.1:8081")
    token = AccessToken.objects.create(
        user=researcher,
        application=Application.objects.get(),
        token="tok-researcher",
        scope="openid profile email",
        expires=timezone.now() + dt.timedelta(hours=1),
    )
    answer = client.get("/o/userinfo/", HTTP_AUTHORIZATION=f"Bearer {token.token}")
    assert answer.status_code == 200
    claims = answer.json()
    assert (claims["preferred_username"], claims["email"]) == ("rosalind", researcher.email)

    researcher.is_active = False
    researcher.save()
    refused = client.get("/o/userinfo/", HTTP_AUTHORIZATION=f"Bearer {token.token}")
    assert refused.status_code == 401
