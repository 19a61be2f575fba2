"""Placement's figures on pages: a recorded time (ISO) as a clock time, seconds as a duration,
in the words the placement itself speaks (launcher/placement/words.py)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django import template
from django.utils import timezone

from launcher.placement.words import clock_text, duration_text

register = template.Library()


@register.filter
def clock(value: Any) -> str:
    """An ISO time (or a datetime) as '14:02' today, '29 Nov 14:02' otherwise; '-' if none."""
    if not value:
        return "-"
    when = value if isinstance(value, dt.datetime) else dt.datetime.fromisoformat(str(value))
    return clock_text(when, timezone.localtime())


@register.filter
def duration(value: Any) -> str:
    """Seconds as 'at once', '45 s', '12 min', '1 h 10 min'; '-' if none."""
    if value is None or value == "":
        return "-"
    return duration_text(float(value))
