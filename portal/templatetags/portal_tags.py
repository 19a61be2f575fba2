"""Small template helpers used across pages."""
from __future__ import annotations

import datetime as dt

from django import template
from django.utils import timezone

register = template.Library()


@register.filter
def state_label(value: str) -> str:
    """`changes_requested` -> `changes requested`."""
    return str(value or "").replace("_", " ")


@register.filter
def age(value: dt.datetime | None) -> str:
    """How long ago, compactly: `3 d 4 h`, `25 min`."""
    if not value:
        return "-"
    seconds = int((timezone.now() - value).total_seconds())
    days, rest = divmod(max(seconds, 0), 86400)
    hours, rest = divmod(rest, 3600)
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {rest // 60} min"
    return f"{rest // 60} min"


@register.filter
def percent(used, total) -> float:
    try:
        return round(float(used) * 100 / float(total), 1) if float(total) else 0.0
    except (TypeError, ValueError):
        return 0.0
