from __future__ import annotations

from core.errors import NON_FIELD, Invalid


class PolicyError(Invalid):
    """Input the policy refuses: per-field messages, nothing saved (HTTP 400)."""

    def __init__(self, errors: dict[str, list[str]] | str, field: str | None = None) -> None:
        super().__init__(errors, field=field or (NON_FIELD if isinstance(errors, str) else None))
