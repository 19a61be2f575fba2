"""API plumbing shared by every app: the error mapping of DESIGN.md and the token view."""
from __future__ import annotations

from django.contrib.auth import authenticate
from django.contrib.auth.signals import user_logged_in
from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status

from allocations.api import strict as serializers
from rest_framework.authtoken.models import Token
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView, set_rollback
from rest_framework.views import exception_handler as drf_exception_handler

from allocations.errors import DomainError

from .apiconf import FormParser, JSONParser
from .security import lockout_response


def _validation_payload(exc: DjangoValidationError) -> dict:
    if hasattr(exc, "error_dict"):
        return {field: [str(m) for e in errors for m in e.messages]
                for field, errors in exc.error_dict.items()}
    return {"non_field_errors": list(exc.messages)}


def exception_handler(exc, context):
    """The API's one mapping of refusals: a domain error (allocations.errors) answers its own
    status and body (400 per field, 403, 404, 409 with the numbers); Django's ValidationError is
    a 400 per field; the rest is DRF's mapping. Nothing half-saved: the transaction of an atomic
    request is rolled back, as DRF does for the errors it maps."""
    if isinstance(exc, DomainError):
        set_rollback()
        return Response(exc.body(), status=exc.status)
    if isinstance(exc, DjangoValidationError):
        set_rollback()
        return Response(_validation_payload(exc), status=status.HTTP_400_BAD_REQUEST)
    return drf_exception_handler(exc, context)


class TokenSerializer(serializers.Serializer):
    token = serializers.CharField(read_only=True)


class TokenInputSerializer(serializers.Serializer):
    username = serializers.CharField(max_length=150)
    password = serializers.CharField(max_length=4096, trim_whitespace=False)


class TokenView(APIView):
    """POST {username, password} -> {token}, as JSON or as a form body (what `curl -d
    username=.. -d password=..` sends). Wrong credentials are a 400 with a message; after
    too many failures for that username from that address, a 429 (django-axes), even with the
    right password.

    It authenticates by the credentials in the body only: a browser session cookie must not
    make it demand a CSRF token (scripts often run beside a logged-in browser)."""

    authentication_classes: list = []
    permission_classes: list = []
    parser_classes = [JSONParser, FormParser]
    api_conflicts = False  # no state to conflict with (portal.schema)

    # The schema names the JSON body only, though a form body works too (the description
    # says so): with two content types openapi-python-client 0.29.1 generates code that does
    # not import (docs/api.md, "A generated client").
    @extend_schema(request={"application/json": TokenInputSerializer}, responses={
        200: TokenSerializer,
        400: OpenApiResponse(description="Missing fields, or wrong username or password "
                                         "(`non_field_errors`)."),
        415: OpenApiResponse(description="The body is neither JSON nor a form "
                                         "(application/x-www-form-urlencoded)."),
        429: OpenApiResponse(description="Too many failed logins for this username from this "
                                         "address: locked out for a while (docs/security.md)."),
    })
    def post(self, request, *args, **kwargs):
        data = TokenInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        # Django's request, not DRF's: django-axes marks a lockout on the request it is given,
        # and its middleware reads the mark from Django's.
        user = authenticate(request=request._request, **data.validated_data)
        if getattr(request._request, "axes_locked_out", False):
            return lockout_response(request._request)
        if user is None or not user.is_active:
            raise ValidationError({"non_field_errors": [
                "Unable to log in with provided credentials."]})
        token, _ = Token.objects.get_or_create(user=user)
        # A token is a login: its signal records it and clears the failure count (axes).
        user_logged_in.send(sender=user.__class__, request=request._request, user=user)
        return Response({"token": token.key})
