"""The launch's `allocation` field: an allocation's id, or "auto" (placement chooses the
first-ranked of the caller's allocations: docs/placement.md)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field

from core import strict
from core.bounds import ID_MAX, ID_MIN

AUTO = "auto"


@extend_schema_field(
    {
        "oneOf": [
            {"type": "integer", "minimum": ID_MIN, "maximum": ID_MAX},
            {"type": "string", "enum": [AUTO]},
        ],
        "description": 'The allocation to run on, or "auto": the first-ranked of your '
        "allocations (POST placements/ with the same body shows the ranking).",
    }
)
class AllocationOrAuto(strict.PrimaryKeyRelatedField):
    """An allocation of the view's queryset, or the string "auto"."""

    def to_internal_value(self, data: Any) -> Any:
        if data == AUTO:
            return AUTO
        return super().to_internal_value(data)
