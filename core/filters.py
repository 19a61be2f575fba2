"""Filters every API shares (django-filter)."""

from __future__ import annotations

from typing import Any

import django_filters
from django import forms
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field

from core.bounds import ID_MAX, ID_MIN


@extend_schema_field(OpenApiTypes.INT64)
class IdFilter(django_filters.NumberFilter):
    """An id filter: a whole number within a 64-bit id's range (`0.5`, `²` or `1e30` is a
    per-field 400 on every database, never an OverflowError on SQLite); both bounds are in the
    OpenAPI document (portal.schema reads `min_value`/`max_value`)."""

    field_class = forms.IntegerField

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("min_value", ID_MIN)
        kwargs.setdefault("max_value", ID_MAX)
        super().__init__(*args, **kwargs)
