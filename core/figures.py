"""The portal's one rounding rule for figures shown to people, and the exact form for files.

Every page (through the template filters in portal/templatetags/portal_tags.py and
launcher/templatetags/launcher_format.py) rounds a figure with `rounded`: `places` decimals,
half up, with thousands separators, unless that would print a non-zero value as 0; then two
significant digits (0.0025 -> "0.0025", 1/3600 -> "0.00028"). GPU-hours and money take 2
places everywhere, so one fact reads as one figure on every page. CSV files carry `exact`
values: every digit of a Decimal, and a float (a GPU-hours figure derived from whole
GPU-seconds) to 6 decimals, which is finer than one GPU-second (0.000278 h), never an
artefact like 0.05388888888888889. The API writes hours as JSON numbers, unrounded, and money
as decimal strings (core/figure_fields.py, docs/api.md "Figures"). Pure Python, no Django.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

#: Decimals of a float in a file: below one GPU-second in GPU-hours, so no information is lost.
FILE_PLACES = 6
#: Money in the API: a decimal string with the ledger's 4 places ("12.3400"), never a float.
MONEY_PLACES = 4
#: The API fields and 409 numbers that are money (decimal strings); other numbers stay numbers.
MONEY_KEYS = frozenset(
    {
        "budget",
        "spend",
        "cost",
        "cost_reserved",
        "reserved_cost",
        "estimate_cost",
        "remaining_budget",
        "budget_remaining",
        "total_cost",
    }
)


def money_text(value: Decimal | int | str) -> str:
    """Money as the API writes it: a decimal string to MONEY_PLACES, exact (no float)."""
    return f"{Decimal(value).quantize(Decimal(1).scaleb(-MONEY_PLACES), rounding=ROUND_HALF_UP):f}"


def exact(value: Decimal | float | int) -> str:
    """Every digit of a figure, no exponent, no trailing zeros (a float to FILE_PLACES)."""
    # A float's fixed-point form is correctly rounded from its binary value, as round() is.
    text = f"{value:.{FILE_PLACES}f}" if isinstance(value, float) else f"{Decimal(value):f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def hours_text(hours: Decimal) -> str:
    """Hours for a message (a refusal's figures): to the second's precision, no trailing zeros."""
    return f"{hours.quantize(Decimal('0.000001')).normalize():f}"


def rounded(value: Decimal | float | int | str, places: int = 2) -> str:
    """A figure rounded for display, never to zero (see the module's rule)."""
    number = Decimal(str(value))
    step = Decimal(1).scaleb(-places)
    if number != 0 and abs(number) < step / 2:
        digits = 2 - number.adjusted() - 1  # two significant digits
        return exact(number.quantize(Decimal(1).scaleb(-digits), ROUND_HALF_UP))
    return f"{number.quantize(step, ROUND_HALF_UP):,f}"


def run_minutes(hours: float | Decimal) -> str:
    """A run's predicted or measured time, as every page and basis says it: "1.7 min" (one
    decimal of a minute; a run of hours reads "90.0 min", the wall-time limit's own unit)."""
    return f"{float(hours) * 60:.1f} min"
