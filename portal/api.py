"""The token view of the API (POST auth/token/). The API's error mapping is core/api.py."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import authenticate
from django.contrib.auth.signals import user_logged_in
from django.http import HttpResponse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core import strict

from .apiconf import FormParser, JSONParser
from .security import lockout_response
from .tokens import services as token_services


class TokenSerializer(serializers.Serializer):
    token = strict.CharField(
        read_only=True,
        help_text=(
            "A new account token: shown this once, stored only as a hash, expires after "
            "PORTAL_ACCOUNT_TOKEN_DAYS (default 30)."
        ),
    )


class TokenInputSerializer(serializers.Serializer):
    username = strict.CharField(max_length=150)
    password = strict.CharField(max_length=4096, trim_whitespace=False)


class TokenView(APIView):
    """POST {username, password} -> {token}, as JSON or as a form body (what `curl -d
    username=.. -d password=..` sends). Wrong credentials are a 400 with a message; after
    too many failures for that username from that address, a 429 (django-axes), even with the
    right password.

    Each success makes a new account token (portal.tokens: hashed, expiring, listed and
    revocable on /account/tokens/, ended by a password change; a person keeps at most ten
    live ones, the oldest are revoked). POST auth/logout/ revokes it.

    It authenticates by the credentials in the body only: a browser session cookie must not
    make it demand a CSRF token (scripts often run beside a logged-in browser)."""

    authentication_classes: list = []
    permission_classes: list = []
    parser_classes = [JSONParser, FormParser]
    api_conflicts = False  # no state to conflict with (portal.schema)

    # The schema names the JSON body only, though a form body works too (the description
    # says so): with two content types openapi-python-client 0.29.1 generates code that does
    # not import (docs/api.md, "A generated client").
    @extend_schema(
        request={"application/json": TokenInputSerializer},
        responses={
            200: TokenSerializer,
            400: OpenApiResponse(
                description="Missing fields, or wrong username or password (`non_field_errors`)."
            ),
            415: OpenApiResponse(
                description="The body is neither JSON nor a form "
                "(application/x-www-form-urlencoded)."
            ),
            429: OpenApiResponse(
                description="Too many failed logins for this username from this "
                "address: locked out for a while (docs/security.md)."
            ),
        },
    )
    def post(self, request: Request, *args: Any, **kwargs: Any) -> HttpResponse:
        data = TokenInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        # Django's request, not DRF's: django-axes marks a lockout on the request it is given,
        # and its middleware reads the mark from Django's.
        user = authenticate(request=request._request, **data.validated_data)
        if getattr(request._request, "axes_locked_out", False):
            return lockout_response(request._request)
        if user is None or not user.is_active:
            raise ValidationError(
                {"non_field_errors": ["Unable to log in with provided credentials."]}
            )
        _, key = token_services.account_token_create(user=user)
        # A token is a login: its signal records it and clears the failure count (axes).
        user_logged_in.send(sender=user.__class__, request=request._request, user=user)
        return Response({"token": key})
