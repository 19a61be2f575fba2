"""The API's one mapping of refusals (settings.REST_FRAMEWORK["EXCEPTION_HANDLER"]); the pages'
is core/refusals.py."""

from __future__ import annotations

from typing import Any

from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler
from rest_framework.views import set_rollback

from .errors import DomainError


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """A refusal of the domain's vocabulary (core.errors) answers its own status and body (400
    per field, 403, 404, 409 with the numbers); everything else is DRF's mapping (its own
    exceptions, and Django's `Http404` and `PermissionDenied`). Nothing half-saved: the
    transaction of an atomic request is rolled back, as DRF does for the errors it maps."""
    if isinstance(exc, DomainError):
        set_rollback()
        return Response(exc.body(), status=exc.status)
    return drf_exception_handler(exc, context)
