from __future__ import annotations

from typing import Any

from django import template

register = template.Library()


@register.filter
def seconds_as_minutes(seconds: Any) -> str:
    """Idle time: `45 s`, `12 min`, `1 h 5 min`."""
    try:
        value = int(seconds)
    except (TypeError, ValueError):
        return "-"
    if value < 60:
        return f"{value} s"
    hours, minutes = divmod(value // 60, 60)
    return f"{hours} h {minutes} min" if hours else f"{minutes} min"
