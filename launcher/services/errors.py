"""Refusals a launch can meet, in the domain's one vocabulary (allocations.errors)."""
from __future__ import annotations

from allocations.errors import Conflict, Invalid


class LaunchConflict(Conflict):
    """The allocation cannot take this launch now (HTTP 409). `data` carries the numbers."""


class LaunchRefused(Invalid):
    """The launch cannot be done as described, whatever the allocation's state (HTTP 400).
    `field`, when set on a subclass, is the dotted input field the message belongs to
    ("params.dataset"); else the body is `{"detail": message}`."""

    field: str = ""

    def __init__(self, message: str) -> None:
        super().__init__(message, field=self.field or None)

    def errors(self) -> dict:
        """The per-field 400 body: {"params": {"dataset": [message]}} for "params.dataset"."""
        return self.body()


class GpusRefused(LaunchRefused):
    """More GPUs than the facility can ever run at once (HTTP 400 on `gpus`): refused at
    launch instead of failing at submission."""

    field = "gpus"
