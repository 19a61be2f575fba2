"""Refusals a launch can meet, in the domain's one vocabulary (core.errors). The 400s
live in launcher/refusals.py (the estimates raise them too) and are named here as well."""

from __future__ import annotations

from core.errors import Conflict

from ..refusals import GpusRefused, LaunchRefused

__all__ = ["GpusRefused", "LaunchConflict", "LaunchRefused"]


class LaunchConflict(Conflict):
    """The allocation cannot take this launch now (HTTP 409). `data` carries the numbers."""
