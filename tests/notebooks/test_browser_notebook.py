"""Issue 24's "Done means", in chromium: the researcher opens a notebook from the allocation
page, lands in JupyterLab through the sign-on (no second password), runs a cell that lists the
project's dataset and prints CUDA_VISIBLE_DEVICES, stops it from the portal, and the allocation
page shows the session charged its exact seconds from record.json; the PI (a member, not the
owner) sees no Open link and cannot open the session's URL. A real JupyterHub; the sync beat
task runs in a thread."""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from pathlib import Path

import pytest
from django.utils import timezone
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

from allocations.models import Dataset, Event
from launcher.notebooks.models import NotebookSession
from tests.browser import login
from tests.notebooks.fixtures import hub_sync, nb_allocation, nb_dirs, nb_facility  # noqa: F401  (fixtures)
from tests.notebooks.hubfixture import WAIT
from tests.waiting import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(900)]
LAB_READY = "#jp-main-dock-panel"
CELL = (
    "import os\n"
    'print("DATA", sorted(os.listdir("datasets/chest-ct")))\n'
    'print("CUDA", repr(os.environ.get("CUDA_VISIBLE_DEVICES")))'
)


def test_a_researcher_opens_runs_and_stops_a_notebook_from_the_allocation_page(
    live_server, hub_sync, page, chromium, researcher, pi, project, nb_allocation, nb_dirs
):
    scans = nb_dirs / "project-data" / project.code / "ct"
    scans.mkdir(parents=True)
    (scans / "patient-001.dcm").write_bytes(b"DICM")
    Dataset.objects.create(
        project=project, name="chest-ct", location="ct", modality="ct", sensitivity="public"
    )
    allocation_page = f"{live_server.url}/allocations/{nb_allocation.pk}/"

    login(page, live_server, researcher.username)
    page.goto(allocation_page)
    assert "after 30 minutes idle" in page.locator("#notebook-idle").inner_text()
    page.locator("#notebook-form [name=gpus]").fill("2")
    page.locator("#notebook-form [name=hours]").fill("1")
    assert page.locator("#notebook-reserve").inner_text() == "2 GPU-hours"
    page.locator("#notebook-form button[type=submit]").click()
    page.wait_for_url(re.compile(r"/notebooks/\d+/$"))
    pk = int(page.url.rstrip("/").rsplit("/", 1)[1])

    # The page opens by itself (static/js/live.js): no reload, within 10 s of the sync seeing
    # the hub report the server ready.
    wait_for(
        lambda: page.locator("#open-notebook-link").count() == 1,
        timeout=WAIT,
        every=0.2,
        what="the session running (its Open link), without a reload",
    )
    seen = timezone.now()
    ready = Event.objects.get(
        content_type__app_label="notebooks", object_id=pk, to_state="running"
    ).created_at
    assert (seen - ready).total_seconds() <= 10, (seen, ready)
    url = page.locator("#open-notebook-link").get_attribute("href")

    # Through the hub's sign-on at the portal's provider: no second password.
    page.goto(url)
    page.locator(LAB_READY).wait_for(timeout=120_000)
    assert page.locator("input[type=password]").count() == 0
    page.locator('.jp-LauncherCard[data-category="Notebook"]').first.click(timeout=60_000)
    editor = page.locator(".jp-NotebookPanel .jp-Cell .cm-content").first
    editor.wait_for(timeout=60_000)
    editor.click()
    page.keyboard.insert_text(CELL)
    output = page.locator(".jp-OutputArea-output", has_text="CUDA")

    def ran() -> bool:
        # JupyterLab drops a run asked for before the new kernel's websocket is connected:
        # run the cell (again) until its output shows.
        editor.click()
        page.keyboard.press("Control+Enter")
        try:
            output.wait_for(timeout=20_000)
        except PlaywrightTimeout:
            return False
        return True

    wait_for(ran, timeout=180, every=0.2, what="the cell's output")
    text = output.inner_text()
    assert "DATA ['patient-001.dcm']" in text and "CUDA '0,1'" in text

    # The PI is a member of the project but not the owner: no Open link, and the hub refuses.
    other = chromium.new_context()
    try:
        theirs = other.new_page()
        theirs.set_default_timeout(30_000)
        login(theirs, live_server, pi.username)
        theirs.goto(allocation_page)
        assert theirs.locator(f"#notebook-{pk}").count() == 1
        assert theirs.locator(f"#open-{pk}").count() == 0
        response = theirs.goto(url)
        theirs.wait_for_load_state()
        assert response.status == 403  # the hub's answer to a user who is not the owner
        assert theirs.locator(LAB_READY).count() == 0
    finally:
        other.close()

    # Stopped from its page; charged exactly what the supervisor recorded, and the page shows
    # the charge by itself within 10 s of it being made.
    page.goto(f"{live_server.url}/notebooks/{pk}/")
    page.locator("#stop-notebook").click()
    session = wait_for(
        lambda: (s := NotebookSession.objects.get(pk=pk)).charged_at and s,
        timeout=WAIT,
        every=0.2,
        what="the charge",
    )
    record = json.loads((Path(session.run_dir) / "record.json").read_text())
    exact = math.ceil(record["ended"] - record["started"]) * 2  # wall seconds x 2 GPUs
    assert session.gpu_seconds == exact and record["reason"] == "stopped"
    expect(page.locator("#notebook-charged")).to_contain_text(
        f"{exact} GPU-seconds", timeout=10_000
    )
    # One fact, one figure: Stopped - Started as the page shows them, to the second, is the
    # wall time charged.
    shown = [
        dt.datetime.strptime(
            page.locator(f"#notebook-{end}").inner_text()[:19], "%Y-%m-%d %H:%M:%S"
        )
        for end in ("started", "stopped")
    ]
    wall = math.ceil(record["ended"] - record["started"])
    assert (shown[1] - shown[0]).total_seconds() == wall
    assert f"({wall} s of wall time x 2 GPUs" in page.locator("#notebook-charged").inner_text()
    page.goto(allocation_page)
    row = page.locator(f"#notebook-{pk}")
    assert "Stopped" in row.inner_text() and f"charged: {exact} GPU-seconds" in row.inner_text()
