"""The house style of the portal's charts, for every app that draws one: plain plotly.js figure
dicts (no server-side figure classes), one layout, one grid, and a date axis of whole days."""

from __future__ import annotations

import datetime as dt
import math
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
    27 Nov"). Ticks count back from `end`, so the latest day (today's bar) is always labelled,
    also when a phone's chart thins them to every other day."""
    half_day = dt.timedelta(hours=12)
    span_days = (end - start).days + 1
    return {
        **GRID,
        "type": "date",
        "tickformat": "%d %b",
        "dtick": ONE_DAY_MS * max(1, span_days // 10),
        "tick0": end.isoformat(),
        "range": [
            (dt.datetime.combine(start, dt.time()) - half_day).isoformat(),
            (dt.datetime.combine(end, dt.time()) + half_day).isoformat(),
        ],
    }


def not_enough_data(title: str, needs: str) -> dict[str, Any]:
    """A figure that says, in words, that there is not enough data yet and what the chart
    needs ("the daily chart needs a charge"), instead of an empty or degenerate plot (an axis
    from -1 to 1). `layout.meta.empty` holds the sentence: static/js/charts.js shows it as
    text in the chart's place; plotly itself, if asked to draw the figure, shows it as the one
    annotation on hidden axes."""
    text = f"Not enough data yet: {needs}"
    hidden = {"visible": False, "showgrid": False, "zeroline": False}
    return {
        "data": [],
        "layout": {
            **LAYOUT,
            "height": 120,
            "title": {"text": title},
            "xaxis": hidden,
            "yaxis": hidden,
            "meta": {"empty": text},
            "annotations": [
                {
                    "text": text,
                    "showarrow": False,
                    "xref": "paper",
                    "yref": "paper",
                    "x": 0.5,
                    "y": 0.5,
                    "font": {"size": 14, "color": "#555"},
                }
            ],
        },
    }


#: A value axis turns logarithmic only when its data span more than this ratio (a decade):
#: 0.16 h to 0.5 h on a log axis reads as if the systems hardly differed.
LOG_SPAN = 10.0


def fitted_axis(
    values: list[float], *, pad: float = 0.08, top_pad: float | None = None
) -> dict[str, Any]:
    """An axis fitted to `values` (plotly's `type` and `range`): linear unless the values are
    all positive and span more than LOG_SPAN, with `pad` of the span either side (`top_pad`
    above, for text labels over the highest point), never below 0 for positive data. Plotly's
    own autorange also fits the text labels of a trace, which sent a scatter's x axis past
    100 h when every point lay between 0.16 and 0.5 h."""
    top_pad = pad if top_pad is None else top_pad
    finite = [v for v in values if v is not None and math.isfinite(v)]
    if not finite:
        return {"type": "linear", "rangemode": "tozero"}
    lo, hi = min(finite), max(finite)
    if lo > 0 and hi / lo > LOG_SPAN:
        low, high = math.log10(lo), math.log10(hi)
        span = high - low
        return {"type": "log", "range": [low - span * pad, high + span * top_pad]}
    span = hi - lo or abs(hi) or 1.0
    low = lo - span * pad
    if lo >= 0:
        low = max(low, 0.0)
    return {"type": "linear", "range": [low, hi + span * top_pad]}
