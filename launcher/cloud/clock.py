"""The cloud app's clock. moto starts instances instantly and never bills, so tests and the
bench move this clock forward to see idle stops and minute charges without waiting."""

from __future__ import annotations

import datetime as dt

from django.utils import timezone

_offset = dt.timedelta(0)


def now() -> dt.datetime:
    """The current time as the cloud app sees it (real time plus any test offset)."""
    return timezone.now() + _offset


def advance(seconds: float) -> dt.datetime:
    """Move the clock forward (tests and the bench only); returns the new now()."""
    global _offset
    _offset += dt.timedelta(seconds=seconds)
    return now()


def reset() -> None:
    global _offset
    _offset = dt.timedelta(0)
