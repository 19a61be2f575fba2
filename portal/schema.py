"""The OpenAPI document tells the truth about errors, for every operation, without a decorator
per view: `PortalAutoSchema` adds the error responses each operation can really return, by
method and route kind, all pointing at three shared component schemas that match what
`core.api.exception_handler` sends (docs/api.md, "Errors").

- 400 `FieldErrors`: every operation (per-field messages for a body or query parameters; a
  query parameter given twice; a body that is not JSON is `{"detail": ...}`).
- 401 and 403 `Error`: every operation that is not public (AllowAny).
- 404 `Error`: every route with a path parameter (others' objects are 404 too), and
  paginated lists (a page past the end).
- 409 `Conflict`: every write (POST, PUT, PATCH, DELETE) unless the view says it has no state
  to conflict with (`api_conflicts = False`).
- 415 `Error`: every operation with a request body (the API reads JSON only).

A view's own `@extend_schema(responses={...})` for a code wins over the generic one.

Output fields that can be null say so (`nullable`), found from the serializer rather than
remembered per field: a field whose default is None, or whose dotted source crosses a nullable
relation (`reviewed_by.username` of a request nobody reviewed yet).
"""

from __future__ import annotations

from typing import Any, Literal

from django.core.exceptions import FieldDoesNotExist
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import ResolvedComponent
from rest_framework.fields import empty
from rest_framework.permissions import AllowAny

from core.bounds import ID_MAX, ID_MIN

WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "An error with a human-readable message.",
    "properties": {"detail": {"type": "string"}},
    "required": ["detail"],
}
CONFLICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": (
        "A state move that is not allowed (`from`, `to`), or a launch the allocation cannot "
        "take (with its numbers: `estimate_gpu_hours`, `remaining_gpu_hours`, ...)."
    ),
    "properties": {
        "detail": {"type": "string"},
        "from": {"type": "string"},
        "to": {"type": "string"},
    },
    "required": ["detail"],
    "additionalProperties": True,
}
FIELD_ERRORS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": (
        'Per-field messages: `{"field": ["message", ...]}`; nested input (a job\'s '
        "`params`) nests the same shape; errors not tied to one field are under "
        '`non_field_errors`; a body that cannot be parsed is `{"detail": "..."}`.'
    ),
    "properties": {
        "non_field_errors": {"type": "array", "items": {"type": "string"}},
        "detail": {"type": "string"},
    },
    "additionalProperties": {
        "anyOf": [{"type": "array", "items": {}}, {"type": "object"}, {"type": "string"}]
    },
}

_COMPONENTS = {
    "Error": ERROR_SCHEMA,
    "Conflict": CONFLICT_SCHEMA,
    "FieldErrors": FIELD_ERRORS_SCHEMA,
}
_DESCRIPTIONS = {
    "400": "Bad input or a policy refusal; nothing was saved.",
    "401": "No credentials, or bad ones.",
    "403": "You can see this but may not do it.",
    "404": "Not found, or not yours to see.",
    "409": "The object's state does not allow this, or the allocation cannot take the launch.",
    "415": "The body is not JSON.",
    "429": "Too many attempts; try again later.",
}


class PortalAutoSchema(AutoSchema):
    """drf-spectacular's AutoSchema plus the portal's error responses (see module docstring)."""

    def _get_response_bodies(
        self, direction: Literal["request", "response"] = "response"
    ) -> dict[str, Any]:
        responses = super()._get_response_bodies(direction)
        for code, component in self._error_codes():
            response = responses.setdefault(code, {"description": _DESCRIPTIONS[code]})
            # A view may describe a code in its own words; the body is still the shared shape.
            response.setdefault(
                "content", {"application/json": {"schema": self._component(component)}}
            )
        for code, response in responses.items():
            if code == "429" and "content" not in response:
                response["content"] = {"application/json": {"schema": self._component("Error")}}
        return dict(sorted(responses.items()))

    def _get_parameters(self):
        """An empty query value is refused (portal.errors): string parameters say minLength 1.
        An integer in the path is an id: a 64-bit signed integer (one outside is a 404 on every
        database: core.bounds)."""
        parameters = super()._get_parameters()
        for parameter in parameters:
            schema = parameter.get("schema", {})
            if parameter.get("in") == "query" and schema.get("type") == "string":
                schema.setdefault("minLength", 1)
            if parameter.get("in") == "path" and schema.get("type") == "integer":
                schema.setdefault("minimum", ID_MIN)
                schema.setdefault("maximum", ID_MAX)
        return parameters

    def _get_filter_parameters(self):
        """django-filter's bounds (`NumberFilter(min_value=1)`) in the parameter schema too."""
        parameters = super()._get_filter_parameters()
        filterset = getattr(self.view, "filterset_class", None)
        for parameter in parameters:
            found = filterset.base_filters.get(parameter["name"]) if filterset else None
            for bound, key in (("min_value", "minimum"), ("max_value", "maximum")):
                if found is not None and found.extra.get(bound) is not None:
                    parameter["schema"][key] = found.extra[bound]
        return parameters

    def _map_serializer_field(self, field, direction, bypass_extensions=False):
        schema = super()._map_serializer_field(field, direction, bypass_extensions)
        if direction == "response" and "$ref" not in schema and _may_be_null(field):
            schema["nullable"] = True
        return schema

    def _error_codes(self) -> list[tuple[str, str]]:
        write = self.method in WRITE_METHODS
        has_body = self.method in ("POST", "PUT", "PATCH") and bool(self._get_request_body())
        query = [p for p in self._get_parameters() if p.get("in") == "query"]
        # Any API request can be a 400: a query parameter given twice (portal.errors).
        codes: list[tuple[str, str]] = [("400", "FieldErrors")]
        if not self._is_public():
            codes += [("401", "Error"), ("403", "Error")]
        if "{" in self.path or any(p["name"] == "page" for p in query):
            codes.append(("404", "Error"))
        if write and getattr(self.view, "api_conflicts", True):
            codes.append(("409", "Conflict"))
        if has_body:
            codes.append(("415", "Error"))
        return codes

    def _is_public(self) -> bool:
        permissions = self.view.get_permissions()
        return not permissions or any(isinstance(p, AllowAny) for p in permissions)

    def _component(self, name: str) -> dict[str, str]:
        component = ResolvedComponent(
            name=name,
            type=ResolvedComponent.SCHEMA,
            object=f"portal.schema.{name}",
            schema=_COMPONENTS[name],
        )
        self.registry.register_on_missing(component)
        return component.ref


def _may_be_null(field: Any) -> bool:
    """Whether DRF can render this output field as null though it does not say allow_null."""
    if getattr(field, "default", empty) is None:
        return True
    model = getattr(getattr(field.parent, "Meta", None), "model", None)
    for attr in getattr(field, "source_attrs", [])[:-1]:
        try:
            relation = model._meta.get_field(attr) if model is not None else None
        except FieldDoesNotExist:
            return False
        if relation is None or not relation.is_relation:
            return False
        if relation.null:
            return True  # DRF renders None when a step of the dotted source is None
        model = relation.related_model
    return False
