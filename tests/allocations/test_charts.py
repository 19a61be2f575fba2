"""The allocation page's charts: axes bounded by what the numbers mean, and a projection only
with a basis (allocations/burn.py: the 7-day rate, in whole days before today)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.test import Client
from django.utils import timezone

from allocations.burn import allocation_burn
from allocations.charts import PROJECTION_LABEL, allocation_charts
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


def test_nineteen_gpu_seconds_keep_the_usage_chart_inside_the_allocation_dates(allocation, pi):
    use(allocation, days_ago=0, gpu_seconds=19)
    figure = charts_for(allocation, pi)["burn_down"]
    xaxis = figure["layout"]["xaxis"]
    assert xaxis["range"] == [allocation.start_date.isoformat(), allocation.end_date.isoformat()]
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
    # From the start to today (half a day each side): no week of empty axis past today.
    assert low.date() == fresh.start_date - dt.timedelta(days=1)
    assert high.date() == today and high - low == dt.timedelta(days=3)
    assert daily["data"][0]["width"] == [ONE_DAY_MS * 0.8]  # a bar most of a day wide
