"""Honest live pages (issue 22): a chart with no data or a line of one point says so instead of
drawing an empty axis; on a phone a chart's legend goes below the plot; a sweep's intervals
give their n and, under 5 folds, say they are wide; the sweep page says how many runs the
facility really runs at once."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pytest
from django.utils import timezone

from allocations.models import Allocation
from launcher.models import Job, Sweep
from tests.browser import login
from tests.factories import FacilityFactory, charge

METRICS = json.loads((Path(__file__).parent / "data" / "metrics_densenet121.json").read_text())
GRID = {
    "models": ["densenet121"],
    "lrs": [0.001],
    "lr_steps": [5],
    "weight_decays": [0.0001],
    "folds": 3,
    "fixed": {"epochs": 6, "size": 64, "batch_size": 16},
}


@pytest.fixture
def allocation(project):
    facility = FacilityFactory(
        slug="local-honest", name="Local processes", backend="local", backend_settings={"slots": 1}
    )
    today = timezone.localdate()
    return Allocation.objects.create(
        project=project,
        facility=facility,
        gpu_hours=Decimal(40),
        start_date=today,
        end_date=today + dt.timedelta(days=30),
        status="active",
        account_name="honest-a1",
    )


def job(allocation, user, n, **fields) -> Job:
    return Job.objects.create(
        **{
            "allocation": allocation,
            "created_by": user,
            "token": f"portal-job-honest{n}",
            "state": "running",
            "params": {"model": "densenet121", "epochs": 8},
            **fields,
        }
    )


def running(history) -> dict:
    return {
        "state": "running",
        "epoch": 1,
        "epochs": 8,
        "step": 3,
        "steps_per_epoch": 15,
        "loss": 0.6,
        "history": history,
    }


@pytest.mark.django_db(transaction=True)
def test_a_loss_chart_without_two_points_says_so(page, live_server, researcher, allocation):
    none = job(allocation, researcher, 1, progress=running([]))
    one = job(allocation, researcher, 2, progress=running([[3, 0.6]]))
    login(page, live_server, researcher.username)
    page.goto(f"{live_server.url}/jobs/{none.pk}/")
    page.wait_for_function("() => document.getElementById('chart-loss').textContent.length > 0")
    assert page.locator("#chart-loss").inner_text() == "No data yet."
    assert page.locator("#chart-loss .main-svg").count() == 0  # no empty axis drawn
    page.goto(f"{live_server.url}/jobs/{one.pk}/")
    page.wait_for_function("() => document.getElementById('chart-loss').textContent.length > 0")
    assert page.locator("#chart-loss").inner_text().startswith("One point so far (3: 0.6000)")


@pytest.mark.django_db(transaction=True)
def test_on_a_phone_the_legend_goes_below_the_plot(page, live_server, researcher, allocation):
    done = job(
        allocation,
        researcher,
        3,
        state="succeeded",
        metrics=METRICS,
        finished_at=timezone.now(),
        progress=running([[15, 0.7], [30, 0.5]]),
    )
    login(page, live_server, researcher.username)
    for width, below in ((1280, False), (390, True)):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{live_server.url}/jobs/{done.pk}/")
        page.locator("#chart-roc .legend").wait_for()
        legend = page.locator("#chart-roc .legend").bounding_box()
        plot = page.locator("#chart-roc .nsewdrag").first.bounding_box()
        assert (legend["y"] >= plot["y"] + plot["height"]) is below, (width, legend, plot)
    # Resizing re-lays the chart out: back to the wide layout without a reload.
    page.set_viewport_size({"width": 1280, "height": 900})
    page.wait_for_function("""() => {
        const l = document.querySelector('#chart-roc .legend').getBoundingClientRect();
        const p = document.querySelector('#chart-roc .nsewdrag').getBoundingClientRect();
        return l.top < p.bottom; }""")


def _label_boxes(page, selector: str) -> list[dict]:
    """The boxes of the labels drawn. Plotly keeps a tick just past the axis's range as a label
    that is not drawn (no box): with some dates the burn-down's range ends a day short of
    "01 Mar". Only the labels a person sees can run into each other."""
    boxes = [t.bounding_box() for t in page.locator(selector).all()]
    return [box for box in boxes if box is not None]


@pytest.mark.django_db(transaction=True)
def test_on_a_phone_the_usage_charts_labels_do_not_run_into_each_other(
    page, live_server, researcher, allocation
):
    """At 390 px plotly put seven date labels under a three-month burn-down ("29 Nov13 Dec")
    and the daily chart's y ticks on its axis title; a narrow chart gets fewer date ticks and
    room for its titles (static/js/charts.js, fitted)."""
    today = timezone.localdate()
    Allocation.objects.filter(pk=allocation.pk).update(
        start_date=today - dt.timedelta(days=2), end_date=today + dt.timedelta(days=88)
    )
    moment = timezone.now() - dt.timedelta(days=1)
    charge(
        allocation=allocation,
        source="local",
        external_id="honest-use",
        period_start=moment,
        period_end=moment,
        gpu_seconds=75,
        cost=Decimal("0"),
    )
    login(page, live_server, researcher.username)
    page.set_viewport_size({"width": 390, "height": 900})
    page.goto(f"{live_server.url}/allocations/{allocation.pk}/")
    page.locator("#chart-burn-down .xtick text").first.wait_for()
    page.locator("#chart-daily .ytitle").wait_for()

    dates = _label_boxes(page, "#chart-burn-down .xtick text")
    assert len(dates) >= 2
    for left, right in zip(dates, dates[1:]):
        assert left["x"] + left["width"] + 4 <= right["x"], dates  # a gap between labels
    title = page.locator("#chart-daily .ytitle").bounding_box()
    for tick in _label_boxes(page, "#chart-daily .ytick text"):
        assert tick["x"] >= title["x"] + title["width"], (tick, title)


@pytest.mark.django_db
def test_sweep_intervals_give_n_and_say_when_they_are_wide(client, researcher, allocation):
    sweep = Sweep.objects.create(
        allocation=allocation,
        created_by=researcher,
        name="n",
        grid=GRID,
        params={"dataset": "synthetic-ct"},
        size=3,
        concurrency=2,
        token="portal-sweep-honest",
        estimate_gpu_hours=Decimal("0.1"),
    )
    for fold in range(3):
        job(
            allocation,
            researcher,
            10 + fold,
            sweep=sweep,
            token=sweep.token,
            array_index=fold,
            state="succeeded",
            metrics={
                "accuracy": 0.8 + 0.05 * fold,
                "recall": 0.9,
                "specificity": 0.7 + 0.1 * fold,
                "roc_auc": 0.85,
            },
            finished_at=timezone.now(),
            params={
                "model": "densenet121",
                "lr": 0.001,
                "lr_step": 5,
                "weight_decay": 0.0001,
                "fold": fold,
                "folds": 3,
            },
        )
    client.force_login(researcher)
    html = client.get(f"/sweeps/{sweep.pk}/").content.decode()
    board = html[html.index('id="leaderboard"') :]
    assert ", n = 3)</small>" in board and "wide: 3 folds" in board
    capacity = html[html.index('id="sweep-capacity"') :]
    assert "at most 2 of its cells; Local processes runs 1 run at a time" in capacity
    assert "A concurrency above 1 cannot help here." in capacity
