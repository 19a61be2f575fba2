"""Refusals of a launch as described, whatever the allocation's state (HTTP 400), in the
domain's one vocabulary (core.errors). Apart from launcher/services/ so that the
estimates (launcher/estimates.py), which the services import, raise the same ones: an estimate
refuses what the launch would refuse, with the same per-field message."""

from __future__ import annotations

from core.errors import Invalid


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
    launch, and by the estimates, instead of failing at submission."""

    field = "gpus"
