"""Small template helpers used across pages."""

from __future__ import annotations

import datetime as dt
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from django import template
from django.utils import timezone
from django.utils.html import conditional_escape, format_html

from allocations.units import Unit, of_row
from core.figures import exact, rounded

register = template.Library()


@register.filter
def state_label(value: str) -> str:
    """`changes_requested` -> `changes requested`."""
    return str(value or "").replace("_", " ")


@register.filter
def age(value: dt.datetime | None) -> str:
    """How long ago, compactly: `3 d 4 h`, `25 min`, `under a minute` (not "0 min")."""
    if not value:
        return "-"
    seconds = int((timezone.now() - value).total_seconds())
    if seconds < 60:
        return "under a minute"
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {rest // 60} min"
    return f"{rest // 60} min"


@register.filter
def row_unit(row: object) -> Unit:
    """A list row's unit (its `cpu_only` annotation): `{% with unit=a|row_unit %}`."""
    return of_row(row)


_exact = exact  # the names the filters below and their tests use


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
    return (
        "< 0.1"
        if 0 < value < Decimal("0.05")
        else f"{value.quantize(Decimal('0.1'), ROUND_HALF_UP)}"
    )


@register.filter
def shown(value, places: int = 2) -> str:
    """A number for display by the one rounding rule (core/figures.py): `places`
    decimals, never rounded to zero; whole numbers as they are; None shows as a dash. Exact
    values stay in the CSV and the API."""
    if value is None or value == "":
        return "-"
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    return rounded(value, int(places))
