"""Whether the portal can drive a facility itself, asked by the pages of this app and of
benchmarks (request form, review page, recommender rows).

The answer belongs to the launcher's backend registry (a higher floor), which registers its
check from `LauncherConfig.ready()`; until then every facility counts as not connected.
"""
from __future__ import annotations

from collections.abc import Callable

from .models import Facility

NOT_CONNECTED = "not connected: staff will activate it by hand"

_check: Callable[[Facility], bool] | None = None


def register_connection_check(check: Callable[[Facility], bool]) -> None:
    """Called once by the launcher app with its registry's `is_connected`."""
    global _check
    _check = check


def facility_connected(facility: Facility) -> bool:
    """True when the portal provisions and runs work on `facility` itself; False when staff
    must set it up by hand (its backend is manual, or not configured yet)."""
    return bool(_check and _check(facility))


def connection_note(facility: Facility) -> str:
    """'' for a connected facility, else the sentence every page shows beside it."""
    return "" if facility_connected(facility) else NOT_CONNECTED
