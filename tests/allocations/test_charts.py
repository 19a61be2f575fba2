"""The allocation page's charts: axes bounded by what the numbers mean, and a forecast only
with a basis."""
from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.test import Client
from django.utils import timezone

from allocations.charts import ONE_DAY_MS, allocation_charts
from allocations.selectors import visible_allocations
from tests.factories import AllocationFactory
from tests.factories import charge

pytestmark = pytest.mark.django_db


@pytest.fixture
def allocation(project, facility):
    today = timezone.localdate()
    return AllocationFactory(project=project, facility=facility, gpu_hours=Decimal("1000"),
                             start_date=today - dt.timedelta(days=30),
                             end_date=today + dt.timedelta(days=60))


def use(allocation, *, days_ago: int, gpu_seconds: int) -> None:
    start = timezone.now() - dt.timedelta(days=days_ago)
    charge(allocation=allocation, source="local",
                               external_id=f"{allocation.pk}-{days_ago}-{gpu_seconds}",
                               period_start=start, period_end=start, gpu_seconds=gpu_seconds)


def charts_for(allocation, user):
    return allocation_charts(visible_allocations(user).get(pk=allocation.pk))


def test_nineteen_gpu_seconds_keep_the_burn_down_inside_the_allocation_dates(allocation, pi):
    use(allocation, days_ago=0, gpu_seconds=19)
    charts = charts_for(allocation, pi)
    xaxis = charts["burn_down"]["layout"]["xaxis"]
    assert xaxis["range"] == [allocation.start_date.isoformat(), allocation.end_date.isoformat()]
    assert charts["run_out"] is None  # one day of use is no basis for a forecast
    assert len(charts["burn_down"]["data"]) == 2  # remaining and even use, no forecast line
    remaining = charts["burn_down"]["data"][0]["y"]
    assert remaining[0] == 1000 and remaining[-1] == pytest.approx(1000 - 19 / 3600)


def test_the_page_says_there_is_no_forecast_yet(allocation, pi):
    use(allocation, days_ago=0, gpu_seconds=19)
    client = Client()
    client.force_login(pi)
    html = client.get(f"/allocations/{allocation.pk}/").content.decode()
    assert "No forecast yet" in html


def test_a_forecast_from_three_days_of_use_is_drawn_and_cut_at_the_end_date(allocation, pi):
    for days_ago in (1, 2, 3):
        use(allocation, days_ago=days_ago, gpu_seconds=3600 * 10)  # 30 h in 14 days
    charts = charts_for(allocation, pi)
    # 970 h left at 30/14 h a day: about 453 days, long after the end date.
    assert charts["run_out"] > allocation.end_date and charts["run_out_after_end"]
    forecast = charts["burn_down"]["data"][2]
    assert forecast["x"][-1] == allocation.end_date.isoformat()
    assert 0 < forecast["y"][-1] < forecast["y"][0]


def test_a_forecast_that_runs_out_before_the_end_reaches_zero(allocation, pi):
    for days_ago in (1, 2, 3, 4):
        use(allocation, days_ago=days_ago, gpu_seconds=3600 * 200)  # 800 h in 4 days
    charts = charts_for(allocation, pi)
    assert timezone.localdate() < charts["run_out"] <= allocation.end_date
    forecast = charts["burn_down"]["data"][2]
    assert forecast["x"][-1] == charts["run_out"].isoformat() and forecast["y"][-1] == 0


def test_a_young_allocations_rate_is_its_use_over_the_days_it_has_existed(project, facility, pi):
    """A 3-day-old allocation that used 10 h a day burns 10 h a day, not 30 h / 14 days."""
    today = timezone.localdate()
    young = AllocationFactory(project=project, facility=facility, gpu_hours=Decimal("1000"),
                              start_date=today - dt.timedelta(days=2),
                              end_date=today + dt.timedelta(days=400))
    for days_ago in (0, 1, 2):
        use(young, days_ago=days_ago, gpu_seconds=3600 * 10)
    charts = charts_for(young, pi)
    assert charts["forecast_rate_days"] == 3
    # 970 h left at 10 h a day: 97 days, run out on the 98th (30 / 14 a day would be 453 days).
    assert charts["run_out"] == today + dt.timedelta(days=98)
    client = Client()
    client.force_login(pi)
    html = client.get(f"/allocations/{young.pk}/").content.decode()
    assert "average rate of the last 3 days" in html


def test_an_old_allocations_rate_is_over_the_last_fourteen_days(allocation, pi):
    for days_ago in (1, 2, 3):
        use(allocation, days_ago=days_ago, gpu_seconds=3600 * 14)
    use(allocation, days_ago=14, gpu_seconds=3600 * 500)  # outside the 14-day window
    charts = charts_for(allocation, pi)
    assert charts["forecast_rate_days"] == 14
    # 1000 - 542 = 458 h left at 42 / 14 = 3 h a day: 152 days, run out on the 153rd.
    assert charts["run_out"] == timezone.localdate() + dt.timedelta(days=153)


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
    fresh = AllocationFactory(project=project, facility=facility, gpu_hours=Decimal("10"),
                              start_date=today - dt.timedelta(days=2),
                              end_date=today + dt.timedelta(days=60))
    use(fresh, days_ago=0, gpu_seconds=180)
    daily = charts_for(fresh, pi)["daily"]
    low, high = (dt.datetime.fromisoformat(x) for x in daily["layout"]["xaxis"]["range"])
    # From the start to today (half a day each side): no week of empty axis past today.
    assert low.date() == fresh.start_date - dt.timedelta(days=1)
    assert high.date() == today and high - low == dt.timedelta(days=3)
    assert daily["data"][0]["width"] == [ONE_DAY_MS * 0.8]  # a bar most of a day wide
