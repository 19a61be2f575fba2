"""The job and sweep pages in a real browser follow the work until it is final, without a
reload: a job that finishes shows its metrics panel (each metric with its 95% interval, the
confusion matrices, the ROC curve), loses its Cancel button and the launch banner, and stops
polling; a sweep's cells and leaderboard fill in. The pages hold at 390 and 1280 px, long log
lines wrap inside their box. Job states are driven from the test through the ORM, as the
monitor would move them.

With SCREENSHOTS_DIR set, the layout test also saves the screenshots docs/screenshots/ holds."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
from decimal import Decimal
from pathlib import Path

import pytest
from django.contrib.messages.storage.base import Message
from django.contrib.messages.storage.cookie import CookieStorage
from django.http import HttpRequest
from django.utils import timezone
from playwright.sync_api import expect

from allocations.models import Allocation
from launcher.models import Job, Sweep
from tests.browser import login
from tests.factories import FacilityFactory

pytestmark = pytest.mark.django_db(transaction=True)
METRICS = json.loads((Path(__file__).parent / "data" / "metrics_densenet121.json").read_text())
LONG_LINE = "portal: cell 0: " + "--data=/scratch/synthetic-ct-300/" + "x" * 600
GRID = {
    "models": ["densenet121"],
    "lrs": [0.001, 0.0001],
    "lr_steps": [5],
    "weight_decays": [0.0001],
    "folds": 2,
    "fixed": {"epochs": 6, "size": 64, "batch_size": 16},
}


@pytest.fixture
def allocation(project):
    facility = FacilityFactory(
        slug="local-live", name="Local processes", backend="local", gpu_hour_rate=Decimal("0.50")
    )
    today = timezone.localdate()
    return Allocation.objects.create(
        project=project,
        facility=facility,
        gpu_hours=Decimal(40),
        start_date=today,
        end_date=today + dt.timedelta(days=30),
        status="active",
        account_name="live-a1",
    )


def running(epoch: int, loss: float) -> dict:
    return {
        "state": "running",
        "epoch": epoch,
        "epochs": 8,
        "step": 7,
        "steps_per_epoch": 15,
        "loss": loss,
        "images_per_s": 21.3,
        "eta_s": 95,
        "history": [[15, 0.69], [30, loss]],
    }


def make_job(allocation, researcher, **fields) -> Job:
    defaults = {
        "allocation": allocation,
        "created_by": researcher,
        "token": f"portal-job-{os.urandom(4).hex()}",
        "state": "running",
        "scheduler_id": "4242",
        "gpus": 1,
        "wall_time_minutes": 60,
        "estimate_gpu_hours": Decimal("1.000"),
        "estimate_cost": Decimal("0.5000"),
        "estimate_source": "wall-time",
        "log_tail": f"epoch 1\n{LONG_LINE}\n",
        "params": {
            "model": "densenet121",
            "dataset": "synthetic-ct",
            "synthetic_n": 300,
            "size": 64,
            "epochs": 8,
            "batch_size": 16,
            "lr": 0.001,
        },
        "progress": running(2, 0.512345678),
    }
    return Job.objects.create(**{**defaults, **fields})


def finish(job: Job) -> None:
    Job.objects.filter(pk=job.pk).update(
        state="succeeded",
        metrics=METRICS,
        gpu_seconds=118,
        exit_code=0,
        finished_at=timezone.now(),
        progress={**running(8, 0.0415), "state": "succeeded", "step": 15, "eta_s": 0},
    )


def banner_cookie(live_server, text: str) -> dict:
    """The messages cookie Django sets after a launch (so the page opens with its banner)."""
    value = CookieStorage(HttpRequest())._encode([Message(25, text, "success")])
    return {"name": "messages", "value": value, "url": live_server.url}


def test_a_job_page_goes_from_live_to_final_without_a_reload(
    page, live_server, researcher, allocation
):
    job = make_job(allocation, researcher)
    page.set_default_timeout(60_000)  # a bound for a loaded machine, not an expected duration
    login(page, live_server, researcher.username)
    page.context.add_cookies([banner_cookie(live_server, f"Job #{job.pk} launched.")])
    page.goto(f"{live_server.url}/jobs/{job.pk}/")
    page.evaluate("window.notReloaded = true")

    assert page.locator(".messages").inner_text() == f"Job #{job.pk} launched."
    assert page.locator("#job-cancel").is_visible()
    assert page.locator("#job-loss").inner_text() == "0.5123"
    assert not page.locator("#job-metrics").is_visible()

    finish(job)

    page.locator("#metrics-table").wait_for()
    assert page.evaluate("window.notReloaded") is True
    assert page.locator("#job-state .status").inner_text() == "Succeeded"
    assert page.locator("#job-cancel").count() == 0 and page.locator(".messages").count() == 0
    row = page.locator('#metrics-table tr[data-metric="recall"] td')
    assert row.nth(0).inner_text() == "Recall (sensitivity)"
    patient = METRICS["patient"]["recall"]
    assert row.nth(1).inner_text() == f"{patient['value']:.3f}"
    assert row.nth(2).inner_text() == f"{patient['ci'][0]:.3f} - {patient['ci'][1]:.3f}"
    labels = page.locator("#metrics-table tbody td:first-child").all_inner_texts()
    assert labels == [
        "Accuracy",
        "Precision",
        "Recall (sensitivity)",
        "Specificity",
        "F1",
        "ROC AUC",
    ]
    cm = METRICS["slice"]["confusion_matrix"]
    cells = page.locator("#confusion-2 td").all_inner_texts()
    assert cells == [str(cm["tn"]), str(cm["fp"]), str(cm["fn"]), str(cm["tp"])]
    page.wait_for_function(
        "() => document.querySelectorAll('#chart-roc .scatterlayer .trace').length == 3"
    )
    assert (
        page.locator("#job-charged").inner_text() == "0.03 GPU-hours (118 GPU-seconds)"
    )  # 2 places, as everywhere
    assert page.locator("#job-eta").inner_text() == "-"
    page.wait_for_function("() => document.getElementById('job').dataset.final === 'true'")


def test_a_sweep_page_fills_in_its_leaderboard(page, live_server, researcher, allocation):
    sweep = Sweep.objects.create(
        allocation=allocation,
        created_by=researcher,
        name="lr check",
        grid=GRID,
        params={"dataset": "synthetic-ct", "synthetic_n": 300},
        size=4,
        token="portal-sweep-live",
        concurrency=2,
        estimate_gpu_hours=Decimal("4.000"),
        estimate_cost=Decimal("2.0000"),
    )
    cells = [
        make_job(
            allocation,
            researcher,
            sweep=sweep,
            token=sweep.token,
            array_index=i,
            state="queued",
            params={
                "model": "densenet121",
                "lr": lr,
                "lr_step": 5,
                "weight_decay": 0.0001,
                "fold": fold,
                "folds": 2,
            },
            progress={},
        )
        for i, (lr, fold) in enumerate([(0.001, 0), (0.001, 1), (0.0001, 0), (0.0001, 1)])
    ]
    page.set_default_timeout(60_000)
    login(page, live_server, researcher.username)
    page.goto(f"{live_server.url}/sweeps/{sweep.pk}/")
    page.evaluate("window.notReloaded = true")
    assert page.locator("#sweep-finished").inner_text() == "0"

    Job.objects.filter(pk=cells[0].pk).update(state="running", progress=running(3, 0.3))
    page.wait_for_function(
        "() => document.querySelector('#sweep-cells').textContent.includes('Running')"
    )
    for cell in cells:
        finish(cell)

    page.wait_for_function("() => document.getElementById('sweep-finished').textContent === '4'")
    assert page.evaluate("window.notReloaded") is True
    assert page.locator("#sweep-state .status").inner_text() == "Finished"
    first = page.locator("#leaderboard tbody tr").first.locator("td").all_inner_texts()
    assert first[5] == "2/2" and first[6].startswith(
        f"{METRICS['patient']['accuracy']['value']:.3f}"
    )
    page.wait_for_function(
        "() => document.querySelectorAll('#chart-sweep .bars .point').length == 2"
    )
    page.wait_for_function("() => document.getElementById('sweep').dataset.final === 'true'")


def test_the_pages_hold_at_390_and_1280_pixels(
    chromium, live_server, researcher, allocation, tmp_path
):
    job = make_job(allocation, researcher)
    finish(job)
    make_job(allocation, researcher, progress=running(5, 0.2))
    sweep = Sweep.objects.create(
        allocation=allocation,
        created_by=researcher,
        name="lr check",
        grid=GRID,
        params={"dataset": "synthetic-ct"},
        size=4,
        token="portal-sweep-shots",
        concurrency=2,
        estimate_gpu_hours=Decimal("4.000"),
    )
    for i, (lr, fold) in enumerate([(0.001, 0), (0.001, 1), (0.0001, 0), (0.0001, 1)]):
        cell = make_job(
            allocation,
            researcher,
            sweep=sweep,
            token=sweep.token,
            array_index=i,
            params={
                "model": "densenet121",
                "lr": lr,
                "lr_step": 5,
                "weight_decay": 0.0001,
                "fold": fold,
                "folds": 2,
            },
        )
        if i < 3:
            finish(cell)
    pages = {
        "job": f"/jobs/{job.pk}/",
        "sweep": f"/sweeps/{sweep.pk}/",
        "allocation": f"/allocations/{allocation.pk}/",
    }
    for width in (1280, 390):
        context = chromium.new_context(viewport={"width": width, "height": 900})
        page = context.new_page()
        page.set_default_timeout(60_000)
        login(page, live_server, researcher.username)
        for name, path in pages.items():
            page.goto(f"{live_server.url}{path}")
            page.wait_for_load_state("networkidle")
            if name == "allocation":
                page.locator("#launch-sweep summary").click()
                page.wait_for_function(  # the script's estimate of the default grid
                    "() => document.getElementById('sweep-estimate').textContent.includes('6 cells x 1.00 GPU-hours')"
                )
            overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
            assert overflow <= 0, f"{name} at {width} px is {overflow} px too wide"
            log = page.locator("#job-log")
            if log.count():
                assert log.evaluate("e => e.scrollWidth <= e.clientWidth"), (
                    "the log line does not wrap"
                )
            page.screenshot(path=tmp_path / f"{name}-{width}.png", full_page=True)
        context.close()
    target = os.environ.get("SCREENSHOTS_DIR")
    if target:
        for shot in tmp_path.glob("*.png"):
            shutil.copy(shot, Path(target) / f"launcher-{shot.name}")


def test_a_notebook_page_opens_and_shows_its_charge_without_a_reload(
    page, live_server, researcher, allocation
):
    from launcher.notebooks.models import NotebookSession

    session = NotebookSession.objects.create(
        allocation=allocation, user=researcher, gpus=1, hours=Decimal("1.00"), server_name="nb-1"
    )
    login(page, live_server, researcher.username)
    page.goto(f"{live_server.url}/notebooks/{session.pk}/")
    assert page.locator("[data-live]").count() == 1
    assert page.locator("#open-notebook-link").count() == 0
    started = timezone.now()

    # The hub reports it ready (the sync beat moves the row): the page opens by itself.
    NotebookSession.objects.filter(pk=session.pk).update(
        state="running", started_at=started, url="/hub/user/researcher/nb-1/"
    )
    page.locator("#open-notebook-link").wait_for(timeout=10_000)
    assert page.locator("#open-notebook-link").get_attribute("href").endswith("/nb-1/")

    # Stopped and charged from the backend's record: the charge appears, then polling stops.
    NotebookSession.objects.filter(pk=session.pk).update(
        state="stopped", stopped_at=started + dt.timedelta(seconds=171), wall_seconds=171,
        gpu_seconds=171, charged_at=timezone.now(),
    )  # fmt: skip
    expect(page.locator("#notebook-charged")).to_contain_text("171 GPU-seconds", timeout=10_000)
    assert page.locator("#open-notebook-link").count() == 0
    assert "Stopped" in page.locator("#notebook-facts .status").inner_text()
    requests = []
    page.on("request", lambda r: requests.append(r.url))
    page.wait_for_timeout(7_000)  # longer than the slowest poll: nothing more is asked
    assert not [u for u in requests if f"/notebooks/{session.pk}/" in u]


def test_an_allocation_page_follows_its_provisioning_without_a_reload(
    page, live_server, researcher, allocation
):
    Allocation.objects.filter(pk=allocation.pk).update(status="provisioning")
    login(page, live_server, researcher.username)
    page.goto(f"{live_server.url}/allocations/{allocation.pk}/")
    assert "Provisioning" in page.locator("h1").inner_text()

    Allocation.objects.filter(pk=allocation.pk).update(status="active")

    expect(page.locator("h1")).to_contain_text("Active", timeout=10_000)
    assert page.locator("[data-live]").count() == 0
