"""API plumbing shared by every app: the error mapping of DESIGN.md and the token view."""
from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import serializers, status
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from allocations.transitions import InvalidTransition
from launcher.services.errors import LaunchConflict, LaunchRefused


def _validation_payload(exc: DjangoValidationError) -> dict:
    if hasattr(exc, "error_dict"):
        return {field: [str(m) for e in errors for m in e.messages]
                for field, errors in exc.error_dict.items()}
    return {"non_field_errors": list(exc.messages)}


def exception_handler(exc, context):
    """400 per field for refused input, 409 for a disallowed state move or a launch the
    allocation cannot take (with the numbers), else DRF's mapping."""
    if isinstance(exc, InvalidTransition):
        return Response(
            {"detail": str(exc), "from": exc.from_state, "to": exc.to_state},
            status=status.HTTP_409_CONFLICT,
        )
    if isinstance(exc, LaunchConflict):
        return Response({"detail": exc.message, **exc.data}, status=status.HTTP_409_CONFLICT)
    if isinstance(exc, LaunchRefused):
        return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, DjangoValidationError):
        return Response(_validation_payload(exc), status=status.HTTP_400_BAD_REQUEST)
    return drf_exception_handler(exc, context)


class TokenSerializer(serializers.Serializer):
    token = serializers.CharField()


class TokenView(ObtainAuthToken):
    """POST {username, password} -> {token}. Wrong credentials are a 400 with a message.

    It authenticates by the credentials in the body only: a browser session cookie must not
    make it demand a CSRF token (scripts often run beside a logged-in browser)."""

    authentication_classes: list = []

    def post(self, request, *args, **kwargs):
        response = super().post(request, *args, **kwargs)
        return Response({"token": response.data["token"]})
