"""Small template helpers used across pages."""
from __future__ import annotations

import datetime as dt
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from django import template
from django.utils import timezone
from django.utils.html import conditional_escape, format_html

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


def _exact(value: Decimal) -> str:
    """Every digit of a figure, no exponent, no trailing zeros."""
    text = f"{value:f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def rounded(value, places: int = 2) -> str:
    """A figure rounded for display, never to zero: `places` decimals (with thousands
    separators) unless that would print a non-zero value as 0, then two significant digits
    (0.0025 -> "0.0025", 0.000278 -> "0.00028")."""
    number = Decimal(str(value))
    step = Decimal(1).scaleb(-places)
    if number != 0 and abs(number) < step / 2:
        digits = 2 - number.adjusted() - 1  # two significant digits
        return _exact(number.quantize(Decimal(1).scaleb(-digits), ROUND_HALF_UP))
    return f"{number.quantize(step, ROUND_HALF_UP):,f}"


@register.filter
def amount(value, places: int = 2) -> str:
    """A ledger figure for a page: rounded by `rounded`, the exact value in the title, e.g.
    `<span class="amount" title="0.0025 (exact)">0.0025</span>`. Blank for None."""
    if value is None or value == "":
        return ""
    try:
        exact = _exact(Decimal(str(value)))
        text = rounded(value, int(places))
    except (InvalidOperation, TypeError, ValueError):
        return conditional_escape(value)
    return format_html('<span class="amount" title="{} (exact)">{}</span>', exact, text)


@register.filter
def percent(used, total) -> str:
    """Used as a percentage of total, one decimal, never 0 when something was used."""
    try:
        used, total = Decimal(str(used)), Decimal(str(total))
    except (InvalidOperation, TypeError, ValueError):
        return "0"
    if not total or not used:
        return "0"
    value = used * 100 / total
    return "< 0.1" if 0 < value < Decimal("0.05") else f"{value.quantize(Decimal('0.1'), ROUND_HALF_UP)}"


@register.filter
def shown(value, places: int = 2) -> str:
    """A number for display: `places` decimals, but never rounded to zero (0.0004 shows as
    0.0004, not 0.00); None shows as a dash. Exact values stay in the CSV and the API."""
    if value is None or value == "":
        return "-"
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    number = float(value)
    text = f"{number:,.{places}f}"
    if number != 0 and float(text.replace(",", "")) == 0:
        text = f"{number:.2g}"
    return text
