"""Display formats for the job and sweep pages: numbers rounded for display only, never to zero
(a small non-zero value keeps its significant digits), money with its currency."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django import template

from core.figures import rounded, run_minutes

from ..estimates import CURRENCY

register = template.Library()


def _number(value: Any) -> float | None:
    if value is None or value == "" or isinstance(value, bool):
        return None
    try:
        return float(Decimal(str(value)))
    except ArithmeticError:
        return None


def nonzero(value: Decimal | float, places: int) -> str:
    """`value` by the portal's one rounding rule (core/figures.py: `places` decimals, or
    two significant digits when that would read 0)."""
    return rounded(value, places)


@register.filter
def loss(value: Any) -> str:
    """A loss to 4 decimals."""
    number = _number(value)
    return "-" if number is None else nonzero(number, 4)


@register.filter
def money(value: Any) -> str:
    """An amount with its currency: USD 1.50 (USD 0.0012 rather than USD 0.00)."""
    number = _number(value)
    return "-" if number is None else f"{CURRENCY} {nonzero(number, 2)}"


@register.filter
def gpu_hours(seconds: Any) -> str:
    """GPU-seconds as GPU-hours to 2 decimals, as on every other page (never rounded to 0)."""
    number = _number(seconds)
    return "-" if number is None else nonzero(Decimal(str(number)) / 3600, 2)


@register.filter
def minutes(hours: Any) -> str:
    """A run's time in hours as the prediction's basis says it ("1.7 min"; core/figures.py)."""
    number = _number(hours)
    return "-" if number is None else run_minutes(number)


@register.filter
def metric(value: Any) -> str:
    """A metric in [0, 1] to 3 decimals."""
    number = _number(value)
    return "-" if number is None else f"{number:.3f}"
