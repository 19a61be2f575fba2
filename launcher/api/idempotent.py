"""The `Idempotency-Key` header of the launch endpoints (POST jobs/, sweeps/, notebooks/) on the
API: its OpenAPI declaration, reading it from a request, and the 201 answer, marked
`Idempotent-Replayed: true` when it returns what the key launched before. The rules are
launcher/idempotency.py's."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter
from rest_framework import status
from rest_framework.response import Response

from ..idempotency import HEADER, Idempotency, request_key

REPLAYED = "Idempotent-Replayed"

IDEMPOTENCY_KEY = OpenApiParameter(
    HEADER,
    {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[!-~]{1,255}$"},
    location=OpenApiParameter.HEADER,
    required=False,
    description="Optional; a key of your own (1 to 255 visible ASCII characters, e.g. a UUID) "
    "that makes the launch safe to retry: the same key with the same body within "
    "24 hours answers 201 with what the first request launched (header "
    "`Idempotent-Replayed: true`) instead of launching again; the same key with "
    "another body, or on another endpoint, is a 409. A refused launch keeps no key "
    '(docs/api.md, "Idempotent launches").',
)


def idempotency_of(request: Any, scope: str) -> Idempotency | None:
    """The request's key (None without one); a malformed key is a 400 on `Idempotency-Key`."""
    return request_key(
        user=request.user, key=request.headers.get(HEADER), scope=scope, body=request.data
    )


def created(data: Any, *, replayed: bool) -> Response:
    """201 with the launched object; a replay says so in a header."""
    response = Response(data, status=status.HTTP_201_CREATED)
    if replayed:
        response[REPLAYED] = "true"
    return response
