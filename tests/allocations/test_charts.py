"""The allocation page's charts: axes bounded by what the numbers mean, and a projection only
with a basis (allocations/burn.py: the 7-day rate, in whole days before today)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.test import Client
from django.utils import timezone

from allocations.burn import allocation_burn
from allocations.charts import DAILY_MIN_DAYS, PROJECTION_LABEL, allocation_charts
from allocations.selectors import visible_allocations
from core.charts import ONE_DAY_MS
from tests.factories import AllocationFactory, charge

pytestmark = pytest.mark.django_db


@pytest.fixture
def allocation(project, facility):
    today = timezone.localdate()
    return AllocationFactory(
        project=project,
        facility=facility,
        gpu_hours=Decimal("1000"),
        start_date=today - dt.timedelta(days=30),
        end_date=today + dt.timedelta(days=60),
    )


def use(allocation, *, days_ago: int, gpu_seconds: int) -> None:
    start = timezone.now() - dt.timedelta(days=days_ago)
    charge(
        allocation=allocation,
        source="local",
        external_id=f"{allocation.pk}-{days_ago}-{gpu_seconds}",
        period_start=start,
        period_end=start,
        gpu_seconds=gpu_seconds,
    )


def charts_for(allocation, user):
    seen = visible_allocations(user).get(pk=allocation.pk)
    return allocation_charts(seen, allocation_burn(seen))


def names(figure) -> list[str]:
    return [trace["name"] for trace in figure["data"]]


def test_nineteen_gpu_seconds_keep_the_usage_chart_on_the_allocation_dates(allocation, pi):
    use(allocation, days_ago=0, gpu_seconds=19)
    figure = charts_for(allocation, pi)["burn_down"]
    low, high = (dt.datetime.fromisoformat(x) for x in figure["layout"]["xaxis"]["range"])
    # The allocation's 90 days with 4% of room either side, not stretched by the tiny use.
    room = dt.timedelta(days=90) * 0.04
    assert low == dt.datetime.combine(allocation.start_date, dt.time()) - room
    assert high == dt.datetime.combine(allocation.end_date, dt.time()) + room
    assert PROJECTION_LABEL not in names(figure)  # today's use is no rate yet
    used = figure["data"][0]["y"]
    assert used[0] == 0 and used[-1] == pytest.approx(19 / 3600)
    assert figure["layout"]["yaxis"]["range"][0] == 0
    assert figure["layout"]["yaxis"]["range"][1] >= 1000  # at least the grant


def test_the_page_says_why_there_is_no_projection(allocation, pi):
    use(allocation, days_ago=0, gpu_seconds=19)
    client = Client()
    client.force_login(pi)
    html = client.get(f"/allocations/{allocation.pk}/").content.decode()
    assert "No projection line. No use in the last 7 days" in html


def test_a_projection_past_the_end_date_is_cut_there(allocation, pi):
    for days_ago in (1, 2, 3):
        use(allocation, days_ago=days_ago, gpu_seconds=3600 * 10)  # 30 h in 7 days
    figure = charts_for(allocation, pi)["burn_down"]
    # 970 h left at 30/7 h a day: 227 days, long after the end date.
    projected = figure["data"][-1]
    assert projected["name"] == PROJECTION_LABEL and projected["line"]["dash"] == "dash"
    assert projected["x"][-1] == allocation.end_date.isoformat()
    assert projected["y"][0] < projected["y"][-1] < 1000


def test_a_projection_that_runs_out_before_the_end_reaches_the_grant(allocation, pi):
    for days_ago in (1, 2, 3, 4):
        use(allocation, days_ago=days_ago, gpu_seconds=3600 * 200)  # 800 h in 7 days
    seen = visible_allocations(pi).get(pk=allocation.pk)
    burn = allocation_burn(seen)
    assert timezone.localdate() < burn.runs_out_on <= allocation.end_date
    projected = allocation_charts(seen, burn)["burn_down"]["data"][-1]
    assert projected["x"][-1] == burn.runs_out_on.isoformat() and projected["y"][-1] == 1000


def test_a_young_allocations_rate_is_its_use_over_the_days_it_has_existed(project, facility, pi):
    """A 2-day-old allocation that used 10 h on each whole day burns 10 h a day, not 20 / 7."""
    today = timezone.localdate()
    young = AllocationFactory(
        project=project,
        facility=facility,
        gpu_hours=Decimal("1000"),
        start_date=today - dt.timedelta(days=2),
        end_date=today + dt.timedelta(days=400),
    )
    for days_ago in (0, 1, 2):
        use(young, days_ago=days_ago, gpu_seconds=3600 * 10)
    burn = allocation_burn(visible_allocations(pi).get(pk=young.pk))
    assert burn.rate_7d.days == 2
    # 970 h left at 10 h a day: 97 days (20 / 7 a day would be 340 days).
    assert burn.runs_out_on == today + dt.timedelta(days=97)
    client = Client()
    client.force_login(pi)
    html = client.get(f"/allocations/{young.pk}/").content.decode()
    assert "the last 7 days over 2 days" in html


def test_an_old_allocations_rate_is_over_the_last_seven_days(allocation, pi):
    for days_ago in (1, 2, 3):
        use(allocation, days_ago=days_ago, gpu_seconds=3600 * 14)
    use(allocation, days_ago=14, gpu_seconds=3600 * 500)  # outside the 7-day window
    burn = allocation_burn(visible_allocations(pi).get(pk=allocation.pk))
    assert burn.rate_7d.days == 7 and burn.rate_7d.gpu_hours_per_day == 6
    # 1000 - 542 = 458 h left at 42 / 7 = 6 h a day: 76.3 days, run out on the 77th.
    assert burn.runs_out_on == timezone.localdate() + dt.timedelta(days=77)


def test_daily_usage_has_day_ticks_and_a_range_of_whole_days(allocation, pi):
    use(allocation, days_ago=0, gpu_seconds=19)
    layout = charts_for(allocation, pi)["daily"]["layout"]
    assert layout["xaxis"]["type"] == "date"
    assert layout["xaxis"]["dtick"] % ONE_DAY_MS == 0
    low, high = (dt.datetime.fromisoformat(x) for x in layout["xaxis"]["range"])
    assert high - low >= dt.timedelta(days=7)
    assert layout["yaxis"]["rangemode"] == "tozero"


def test_daily_usage_spans_the_allocations_days_so_far_with_readable_bars(project, facility, pi):
    today = timezone.localdate()
    fresh = AllocationFactory(
        project=project,
        facility=facility,
        gpu_hours=Decimal("10"),
        start_date=today - dt.timedelta(days=2),
        end_date=today + dt.timedelta(days=60),
    )
    use(fresh, days_ago=0, gpu_seconds=180)
    daily = charts_for(fresh, pi)["daily"]
    low, high = (dt.datetime.fromisoformat(x) for x in daily["layout"]["xaxis"]["range"])
    # The last week to today (half a day each side): no axis past today, and a 3-day-old
    # allocation's bars each a seventh of the plot, its days before the start shaded.
    assert high == dt.datetime.combine(today, dt.time()) + dt.timedelta(hours=12)
    assert high - low == dt.timedelta(days=DAILY_MIN_DAYS)
    assert daily["data"][0]["width"] == [ONE_DAY_MS * 0.8]  # a bar most of a day wide
    (before,) = daily["layout"]["shapes"]
    assert before["x0"] == daily["layout"]["xaxis"]["range"][0]
    start = dt.datetime.combine(fresh.start_date, dt.time())
    assert dt.datetime.fromisoformat(before["x1"]) == start - dt.timedelta(hours=12)
    assert [n["text"] for n in daily["layout"]["annotations"]] == ["before the allocation started"]


@pytest.fixture
def first_day(project, facility):
    """An allocation that started today and has one charge: 2,829 GPU-seconds (0.79 h)."""
    today = timezone.localdate()
    fresh = AllocationFactory(
        project=project,
        facility=facility,
        gpu_hours=Decimal("400"),
        start_date=today,
        end_date=today + dt.timedelta(days=90),
    )
    use(fresh, days_ago=0, gpu_seconds=2829)
    return fresh


def test_one_day_of_use_is_one_bar_of_a_week_not_the_whole_plot(first_day, pi):
    daily = charts_for(first_day, pi)["daily"]
    xaxis = daily["layout"]["xaxis"]
    low, high = (dt.datetime.fromisoformat(x) for x in xaxis["range"])
    (bar,) = daily["data"]
    share = bar["width"][0] / ((high - low).total_seconds() * 1000)
    assert share == pytest.approx(0.8 / DAILY_MIN_DAYS)  # was 0.8: the plot's whole width
    assert bar["x"] == [first_day.start_date.isoformat()] and bar["y"] == [0.785833]
    # Ticks count back from today, so today's bar is labelled however they are thinned.
    assert xaxis["tick0"] == timezone.localdate().isoformat()


def test_one_day_of_use_is_a_visible_marker_with_its_figure(first_day, pi):
    figure = charts_for(first_day, pi)["burn_down"]
    layout, used = figure["layout"], figure["data"][0]
    low = dt.datetime.fromisoformat(layout["xaxis"]["range"][0])
    # The first day's point sits off the y axis, drawn whole over the x axis, with its figure.
    assert low < dt.datetime.combine(first_day.start_date, dt.time()) - dt.timedelta(days=3)
    assert used["x"][-1] == first_day.start_date.isoformat() and used["y"][-1] == 0.785833
    assert used["cliponaxis"] is False and used["marker"]["size"] >= 8
    assert "text" in used["mode"] and used["text"][-1] == "0.79 used"
    assert used["textposition"] == "top right"  # into the plot, away from the y axis
    assert layout["yaxis"]["range"] == [0, 420]  # from 0 to the grant, and a little more
