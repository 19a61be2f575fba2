"""The claims the hub reads and the one rule of who may sign in: an active portal user."""

from __future__ import annotations

from typing import ClassVar

from oauth2_provider.oauth2_validators import OAuth2Validator


class PortalOAuth2Validator(OAuth2Validator):
    """`preferred_username` is the portal username (the hub's user name), `email` and `name`
    with their scopes. A user deactivated after the hub was given a code or a token is refused
    at the token and userinfo endpoints too, not only at the portal's login."""

    oidc_claim_scope: ClassVar[dict[str, str]] = {
        **OAuth2Validator.oidc_claim_scope,
        "preferred_username": "openid",
    }

    def get_additional_claims(self, request):
        user = request.user
        return {
            "preferred_username": user.get_username(),
            "email": user.email,
            "name": user.get_full_name() or user.get_username(),
        }

    def validate_code(self, client_id, code, client, request, *args, **kwargs):
        return (
            super().validate_code(client_id, code, client, request, *args, **kwargs)
            and request.user.is_active
        )

    def validate_bearer_token(self, token, scopes, request):
        return super().validate_bearer_token(token, scopes, request) and request.user.is_active
