from __future__ import annotations

from django.core.exceptions import ValidationError


class PolicyError(ValidationError):
    """Input the policy refuses: per-field messages, nothing saved (HTTP 400)."""

    def __init__(self, errors: dict[str, list[str]] | str, field: str | None = None) -> None:
        if isinstance(errors, str):
            errors = {field or "non_field_errors": [errors]}
        super().__init__(errors)
