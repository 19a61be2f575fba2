"""Registering the hub as the provider's one client."""

from __future__ import annotations

from oauth2_provider.models import get_application_model

HUB_CLIENT_NAME = "JupyterHub"


def hub_client_register(*, client_id: str, client_secret: str, hub_url: str):
    """Create or update the hub's application: confidential, authorization code, no consent
    page (the portal runs the hub; its users already agreed), redirect
    `<hub_url>/hub/oauth_callback`, RS256 ID tokens. Idempotent; returns (application, created)."""
    if not client_id or not client_secret:
        raise ValueError("the hub's client id and secret must both be given")
    application_model = get_application_model()
    application, created = application_model.objects.get_or_create(
        client_id=client_id, defaults={"name": HUB_CLIENT_NAME}
    )
    application.name = HUB_CLIENT_NAME
    application.client_type = application_model.CLIENT_CONFIDENTIAL
    application.authorization_grant_type = application_model.GRANT_AUTHORIZATION_CODE
    application.skip_authorization = True
    application.redirect_uris = f"{hub_url.rstrip('/')}/hub/oauth_callback"
    application.algorithm = application_model.RS256_ALGORITHM
    application.client_secret = client_secret  # hashed on save (hash_client_secret)
    application.hash_client_secret = True
    application.save()
    return application, created
