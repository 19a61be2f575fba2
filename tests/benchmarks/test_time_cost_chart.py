"""/recommend/'s time-against-cost chart, fitted to its points (issue 39): every point lay
between 0.16 and 0.5 h while the x axis ran past 100 h (plotly's autorange fitted the front's
text labels on a log axis), and a label sat on the axis numbers. Axes now span the points with
padding, logarithmic only when the values span more than a decade; labels lean into the plot;
with no point at all the chart says so in words."""

from __future__ import annotations

import math

import pytest

from benchmarks.charts import time_vs_cost
from core.charts import LOG_SPAN, fitted_axis


def system(name: str, hours: float | None, cost: float | None, *, pareto: bool = False) -> dict:
    return {
        "node_type": name,
        "facility": "site",
        "predicted_hours": hours,
        "cost": cost,
        "eligible": True,
        "fits_memory": True,
        "pareto": pareto,
    }


SHORT_RUNS = [
    system("H100", 0.16, 3.20, pareto=True),
    system("A100-80", 0.24, 1.90, pareto=True),
    system("A100-40", 0.31, 2.10),
    system("V100", 0.50, 1.10, pareto=True),
]


def test_an_axis_of_short_runs_is_linear_and_fitted_to_them():
    layout = time_vs_cost(SHORT_RUNS)["layout"]

    xaxis, yaxis = layout["xaxis"], layout["yaxis"]
    assert xaxis["type"] == "linear" and yaxis["type"] == "linear"  # 3x is no decade
    low, high = xaxis["range"]
    assert 0.1 < low < 0.16 and 0.5 < high < 0.6  # was past 100 h
    assert yaxis["range"][0] < 1.10 and 3.20 < yaxis["range"][1] < 4.0


def test_values_spanning_decades_get_a_log_axis_around_them():
    layout = time_vs_cost([system("fast", 0.2, 50.0, pareto=True), system("slow", 40.0, 0.4)])[
        "layout"
    ]

    for axis, (lo, hi) in ((layout["xaxis"], (0.2, 40.0)), (layout["yaxis"], (0.4, 50.0))):
        assert axis["type"] == "log"
        low, high = axis["range"]  # in decades, as plotly takes a log range
        assert math.log10(lo) - 0.5 < low < math.log10(lo)
        assert math.log10(hi) < high < math.log10(hi) + 0.6


def test_the_fronts_labels_lean_into_the_plot_and_its_titles_clear_the_ticks():
    figure = time_vs_cost(SHORT_RUNS)
    front = next(t for t in figure["data"] if t["name"].startswith("Pareto front"))

    assert front["text"] == ["H100", "A100-80", "V100"]  # the facility is in the hover
    assert front["customdata"] == ["site"] * 3
    assert front["textposition"] == ["top right", "top right", "top left"]
    for key in ("xaxis", "yaxis"):
        assert figure["layout"][key]["automargin"] is True
        assert figure["layout"][key]["title"]["standoff"] >= 8


def test_no_system_with_a_time_and_a_cost_is_a_sentence_not_an_empty_axis():
    figure = time_vs_cost([system("unknown", None, None), system("free?", 2.0, None)])

    assert figure["data"] == []
    assert figure["layout"]["meta"]["empty"] == (
        "Not enough data yet: no system has both a predicted time and a cost for this workload "
        "(the table says why)."
    )


@pytest.mark.parametrize(
    "values, kind",
    [
        ([0.16, 0.5], "linear"),
        ([1.0, LOG_SPAN], "linear"),
        ([1.0, LOG_SPAN * 1.01], "log"),
        ([0.0, 500.0], "linear"),  # a free system's 0 has no logarithm
    ],
)
def test_fitted_axis_turns_log_only_past_a_decade_of_positive_values(values, kind):
    assert fitted_axis(values)["type"] == kind


def test_fitted_axis_pads_a_single_value_and_never_goes_below_zero():
    assert fitted_axis([2.0], pad=0.1)["range"] == [pytest.approx(1.8), pytest.approx(2.2)]
    assert fitted_axis([0.0, 1.0], pad=0.1)["range"] == [0.0, pytest.approx(1.1)]
    assert fitted_axis([])["rangemode"] == "tozero"
