"""Tables for people (Rich), JSON for scripts (`--json`: the API's objects, unchanged)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import typer
from rich import box
from rich.console import Console
from rich.table import Table

out = Console(soft_wrap=False)
err = Console(stderr=True)


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False) + "\n")
    sys.stdout.flush()


def say(text: str) -> None:
    """A line of plain text, its words wrapped at the terminal's width (no markup: a JSON
    `[...]` in it is printed as it is)."""
    out.print(text, markup=False, highlight=False)


def table(
    title: str, columns: Sequence[str], rows: Iterable[Sequence[Any]], *, compact: bool = False
) -> None:
    """A table; `compact`: no borders, one space between columns, only text columns folded
    when the terminal is narrow (numbers and dates stay whole)."""
    if compact:
        grid = Table(
            title=title,
            title_justify="left",
            box=box.SIMPLE_HEAD,
            show_edge=False,
            pad_edge=False,
            padding=(0, 0),
        )
    else:
        grid = Table(title=title, title_justify="left")
    for name in columns:
        numeric = name.lower() in NUMERIC
        grid.add_column(
            name,
            justify="right" if numeric else "left",
            overflow="fold",
            no_wrap=compact and (numeric or name.lower() in WHOLE),
        )
    for row in rows:
        grid.add_row(*("-" if v is None or v == "" else str(v) for v in row))
    out.print(grid)


NUMERIC = {
    "id",
    "alloc",
    "sweep",
    "granted",
    "used",
    "reserved",
    "left",
    "gpus",
    "gpu-h",
    "estimate",
    "cells",
    "cost",
    "rank",
    "folds",
    "epoch",
    "%",
}


# Columns a compact table never folds: a date or a state cut in two reads as something else.
WHOLE = {"ends", "runs out", "status", "state", "created", "started", "size", "unit"}


def grant(value: Any) -> str:
    """Granted GPU-hours: whole as most grants are, else to 2 places."""
    if value is None or value == "":
        return "-"
    number = Decimal(str(value))
    return f"{number:,.0f}" if number == number.to_integral_value() else f"{number:,.2f}"


def _rounded(number: Decimal, places: int) -> str:
    """`number` to `places`, half up, with thousands separators; never a figure other than
    zero shown as zero: below half the last place, two significant digits."""
    step = Decimal(1).scaleb(-places)
    if number and abs(number) < step / 2:
        digits = 1 - number.adjusted()  # two significant digits
        small = number.quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP)
        return f"{small.normalize():f}"
    return f"{number.quantize(step, rounding=ROUND_HALF_UP):,f}"


def hours(value: Any, places: int = 2) -> str:
    """Hours as the API gives them (a number, unrounded) for a person, by the pages' one rule
    (core/figures.py): 2 places, never a non-zero figure as zero (one GPU-second is 0.00028
    GPU-hours, not 0.00)."""
    if value is None or value == "":
        return "-"
    return _rounded(Decimal(str(value)), places)


def money(value: Any, places: int = 2) -> str:
    """Money as the API gives it (a decimal string, "12.3400"), rounded half up for a table
    ("0.0003" stays 0.0003); read as a Decimal, never through a float."""
    if value is None or value == "":
        return "-"
    return _rounded(Decimal(str(value)), places)


def duration(seconds: Any) -> str:
    if seconds is None:
        return "-"
    seconds = int(float(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def show_estimate(
    found: dict[str, Any], headline: str, *, as_json: bool, unit: dict[str, Any]
) -> None:
    """An estimate from `jobs/estimate/` or `sweeps/estimate/`: the API's object, or the
    headline, what is left (in the allocation's `unit`), whether it fits, and the basis."""
    if as_json:
        print_json(found)
        return
    fits = "fits" if found["fits"] else "does NOT fit"
    typer.echo(
        f"Estimate: {headline} ({found['source']}); "
        f"{hours(found['remaining_gpu_hours'])} {unit['hours']} left: it {fits}."
    )
    typer.echo(found["basis"])
