"""The house style of the portal's charts, for every app that draws one: plain plotly.js figure
dicts (no server-side figure classes), one layout, one grid, and a date axis of whole days."""

from __future__ import annotations

import datetime as dt
from typing import Any

ONE_DAY_MS = 86_400_000
DAY_BAR_MS = ONE_DAY_MS * 0.8  # a day's bar: most of the day, a gap between days

LAYOUT: dict[str, Any] = {
    "margin": {"l": 56, "r": 16, "t": 40, "b": 48},
    "height": 320,
    "font": {"family": "system-ui, sans-serif", "size": 12},
    "paper_bgcolor": "#fff",
    "plot_bgcolor": "#fff",
    "legend": {"orientation": "h", "y": -0.2},
}
GRID = {"gridcolor": "#e5e7eb", "zeroline": False}


def day_axis(start: dt.date, end: dt.date) -> dict[str, Any]:
    """A date axis for bars of one day each, `start` to `end` inclusive: ticks on whole days
    only (every day, or every n-th day so that about ten show), labelled once each, and half a
    day of margin either side so the first and last bars are whole. Left to itself plotly puts
    ticks every 12 hours over a day or two and labels each with its date ("26 Nov, 26 Nov,
    27 Nov")."""
    half_day = dt.timedelta(hours=12)
    span_days = (end - start).days + 1
    return {
        **GRID,
        "type": "date",
        "tickformat": "%d %b",
        "dtick": ONE_DAY_MS * max(1, span_days // 10),
        "range": [
            (dt.datetime.combine(start, dt.time()) - half_day).isoformat(),
            (dt.datetime.combine(end, dt.time()) + half_day).isoformat(),
        ],
    }
