"""The job page in a real browser: the progress bar, ETA and loss curve follow the job as its
progress changes, by polling the JSON API (no reload); without JS the page shows the same.

The bar is read as a number: the server renders `value="10.0"` and the script, once its first
poll (2 s after load) has run, sets the same 10 as `value="10"`. Comparing attribute strings made
this test depend on whether that poll had already happened (it had, on a loaded machine)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.utils import timezone

from allocations.models import Allocation
from launcher.models import Job
from tests.browser import login
from tests.factories import FacilityFactory

pytestmark = pytest.mark.django_db(transaction=True)


def progress(epoch: int, step: int, loss: float, eta: float, history):
    return {
        "state": "running",
        "epoch": epoch,
        "epochs": 4,
        "step": step,
        "steps_per_epoch": 10,
        "loss": loss,
        "images_per_s": 12.5,
        "eta_s": eta,
        "history": history,
    }


def bar(page) -> float:
    return page.evaluate("document.getElementById('job-progress').value")


def test_the_progress_bar_follows_the_running_job(page, live_server, project, researcher, client):
    facility = FacilityFactory(slug="hpc-b", backend="local")
    today = timezone.localdate()
    allocation = Allocation.objects.create(
        project=project,
        facility=facility,
        gpu_hours=Decimal(5),
        start_date=today,
        end_date=today + dt.timedelta(days=9),
        status="active",
    )
    job = Job.objects.create(
        allocation=allocation,
        created_by=researcher,
        token="portal-job-b1",
        state="running",
        scheduler_id="42",
        params={"model": "resnet18", "epochs": 4},
        progress=progress(1, 4, 0.7, 300, [[4, 0.7]]),
    )
    client.force_login(researcher)  # the page is complete without JS
    assert b'id="job-progress" max="100" value="10.0"' in client.get(f"/jobs/{job.pk}/").content

    page.set_default_timeout(60_000)  # a bound for a loaded machine, not an expected duration
    login(page, live_server, researcher.username)
    page.goto(f"{live_server.url}/jobs/{job.pk}/")
    assert bar(page) == 10.0

    Job.objects.filter(pk=job.pk).update(
        progress=progress(3, 5, 0.41, 120, [[4, 0.7], [14, 0.55], [25, 0.41]]), log_tail="epoch 3"
    )

    page.wait_for_function("() => document.getElementById('job-progress').value == 62.5")
    assert page.locator("#job-eta").inner_text() == "120 s"
    assert page.locator("#job-loss").inner_text() == "0.4100"
    page.wait_for_function(
        "() => document.querySelectorAll('#chart-loss .scatterlayer .point').length == 3"
    )
    page.wait_for_function(
        "() => document.getElementById('job-log').textContent.includes('epoch 3')"
    )

    Job.objects.filter(pk=job.pk).update(state="succeeded")
    page.wait_for_function(
        "() => document.querySelector('#job-state .status').textContent == 'Succeeded'"
    )
    assert bar(page) == 100.0
