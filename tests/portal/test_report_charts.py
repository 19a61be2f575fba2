"""The usage report's charts with too little data (issue 39): before anything is charged a PI's
report said nothing in an empty chart on a -1..1 axis. Now each chart says in words what it
still needs, and one period or one job size is a bar of sane width, centred, on an axis from 0."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.test import Client

from launcher.models import Job
from portal.reports.charts import MIN_CATEGORIES, report_charts
from portal.reports.selectors import usage_report
from tests.factories import AllocationFactory, FacilityFactory, charge

pytestmark = pytest.mark.django_db
NOW = dt.datetime(2026, 11, 20, 12, tzinfo=dt.UTC)


@pytest.fixture
def allocation(project, facility):
    return AllocationFactory(project=project, facility=facility)


def queued_job(allocation, user) -> Job:
    """A job launched but not charged yet (its report row holds 0 GPU-hours)."""
    return Job.objects.create(
        allocation=allocation, created_by=user, gpus=1, state="queued", token="t-queued"
    )


def test_a_report_with_a_job_but_no_charge_says_what_the_usage_chart_needs(
    allocation, pi, researcher
):
    queued_job(allocation, researcher)
    report = usage_report(pi)
    assert [row["gpu_seconds"] for row in report.rows] == [0]  # the row that drew 0 on -1..1

    usage = report_charts(report)["usage"]

    assert usage["data"] == []
    assert usage["layout"]["meta"]["empty"] == (
        "Not enough data yet: no job or notebook in this report has been charged. "
        "GPU-hours by project and month show from the first charge."
    )
    assert usage["layout"]["annotations"][0]["text"] == usage["layout"]["meta"]["empty"]
    assert usage["layout"]["xaxis"]["visible"] is False


def test_one_job_size_is_a_centred_bar_on_an_axis_from_zero(allocation, pi, researcher):
    queued_job(allocation, researcher)

    sizes = report_charts(usage_report(pi))["sizes"]

    assert "meta" not in sizes["layout"]
    assert sizes["data"][0]["x"] == ["1"] and sizes["data"][0]["y"] == [1]
    # One category in room for MIN_CATEGORIES: a bar a quarter of the plot wide, not all of it.
    extra = (MIN_CATEGORIES - 1) / 2
    assert sizes["layout"]["xaxis"]["range"] == [-0.5 - extra, 0.5 + extra]
    assert sizes["layout"]["yaxis"]["rangemode"] == "tozero"
    # A count of jobs has whole ticks: 0, 1 (not 0.2, 0.4, ...).
    assert sizes["layout"]["yaxis"]["dtick"] == 1
    assert sizes["layout"]["yaxis"]["tickformat"] == ",d"


def test_a_report_with_nothing_at_all_says_so_for_both_charts(allocation, pi):
    charts = report_charts(usage_report(pi))

    assert charts["sizes"]["layout"]["meta"]["empty"] == (
        "Not enough data yet: no job in this report has been launched. Jobs by size show from "
        "the first."
    )
    assert charts["usage"]["layout"]["meta"]["empty"].startswith("Not enough data yet:")


def test_a_charge_draws_the_usage_chart_from_zero(allocation, pi):
    charge(
        allocation=allocation,
        source="local",
        external_id="r-1",
        period_start=NOW,
        gpu_seconds=2829,
        cost=Decimal("0"),
    )

    usage = report_charts(usage_report(pi))["usage"]

    assert "meta" not in usage["layout"]
    assert usage["data"][0]["y"] == [pytest.approx(2829 / 3600)]
    assert usage["layout"]["yaxis"]["rangemode"] == "tozero"
    assert usage["layout"]["xaxis"]["range"] == [-2.0, 2.0]  # one month, centred


def test_the_page_carries_the_sentence_for_the_browser(allocation, pi, researcher):
    queued_job(allocation, researcher)
    client = Client()
    client.force_login(pi)

    html = client.get("/reports/usage/").content.decode()

    assert "Not enough data yet: no job or notebook in this report has been charged." in html


def test_the_usage_chart_draws_the_groups_with_the_most_hours(project, pi):
    """Of more groups than it draws, the usage chart draws those with the most hours (the
    report's ranking), most first, and says so in its title; not the first by name."""
    from portal.reports.charts import SERIES

    count = SERIES + 5
    for i in range(count):
        # F00 has the fewest hours, F24 the most: the first 20 by name are the smallest.
        facility = FacilityFactory(slug=f"f{i:02d}", name=f"F{i:02d}")
        charge(
            allocation=AllocationFactory(project=project, facility=facility),
            source="local",
            external_id=f"r-{i}",
            period_start=NOW,
            gpu_seconds=3600 * (i + 1),
            cost=Decimal("0"),
        )

    usage = report_charts(usage_report(pi, group_by="facility"))["usage"]

    assert [trace["name"] for trace in usage["data"]] == [
        f"F{i:02d}" for i in range(count - 1, count - 1 - SERIES, -1)
    ]
    assert usage["layout"]["title"]["text"].endswith(f"(the {SERIES} with the most)")
