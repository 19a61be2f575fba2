"""Durations, clock times and money in the words a placement speaks (pure)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal


def duration_text(seconds: float) -> str:
    """'at once' below 30 s, else '45 s', '12 min', '1 h 10 min', '2 days 3 h'."""
    s = max(0, round(seconds))
    if s < 30:
        return "at once" if s == 0 else f"{s} s"
    if s < 90:
        return f"{s} s"
    minutes = round(s / 60)
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h" + (f" {minutes} min" if minutes else "")
    days, hours = divmod(hours, 24)
    return f"{days} days" + (f" {hours} h" if hours else "")


def wait_text(seconds: float) -> str:
    """How long a job waits, as a phrase: 'starts at once' or 'waits 12 min'."""
    text = duration_text(seconds)
    return "starts at once" if text == "at once" else f"waits {text}"


def clock_text(when: dt.datetime, now: dt.datetime) -> str:
    """'14:02' today (in `now`'s time zone), else '29 Nov 14:02'."""
    local = when.astimezone(now.tzinfo) if now.tzinfo else when
    return local.strftime("%H:%M" if local.date() == now.date() else "%d %b %H:%M")


def money_text(amount: Decimal, currency: str = "USD") -> str:
    """'$3.10' for dollars, else '3.10 EUR'."""
    figure = f"{amount.quantize(Decimal('0.01')):,}"
    return f"${figure}" if currency == "USD" else f"{figure} {currency}"
