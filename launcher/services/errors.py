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
    """The launch cannot be done as described, whatever the allocation's state (HTTP 400).
    `field`, when set, is the dotted input field the message belongs to ("params.dataset")."""

    field: str = ""

    def errors(self) -> dict:
        """The per-field 400 body: {"params": {"dataset": [message]}} for "params.dataset"."""
        if not self.field:
            return {"detail": str(self)}
        body: dict = {}
        *outer, last = self.field.split(".")
        node = body
        for part in outer:
            node = node.setdefault(part, {})
        node[last] = [str(self)]
        return body
