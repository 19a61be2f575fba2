"""Whether the portal can drive a facility itself, asked by the pages of this app and of
benchmarks (request form, review page, recommender rows).

The answer belongs to the launcher's backend registry (a higher floor); the settings name its
check (`PORTAL_CONNECTION_CHECK`), so this floor never imports it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from django.conf import settings
from django.utils.module_loading import import_string

from .models import Facility

NOT_CONNECTED = "not connected: staff will activate it by hand"


@functools.cache
def _check() -> Callable[[Facility], bool]:
    check: Callable[[Facility], bool] = import_string(settings.PORTAL_CONNECTION_CHECK)
    return check


def facility_connected(facility: Facility) -> bool:
    """True when the portal provisions and runs work on `facility` itself; False when staff
    must set it up by hand (its backend is manual, or not configured yet)."""
    return bool(_check()(facility))


def connection_note(facility: Facility) -> str:
    """'' for a connected facility, else the sentence every page shows beside it."""
    return "" if facility_connected(facility) else NOT_CONNECTED
