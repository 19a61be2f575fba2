"""Refusals a launch can meet, each mapped to an HTTP status by the API."""
from __future__ import annotations

from decimal import Decimal


class LaunchConflict(Exception):
    """The allocation cannot take this launch now (HTTP 409). `data` carries the numbers."""

    def __init__(self, message: str, **data: object) -> None:
        super().__init__(message)
        self.message = message
        self.data = {k: (float(v) if isinstance(v, Decimal) else v) for k, v in data.items()}


class LaunchRefused(Exception):
    """The launch cannot be done as described, whatever the allocation's state (HTTP 400)."""
