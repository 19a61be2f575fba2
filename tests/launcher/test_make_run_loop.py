"""The README's browser loop, word for word, on `make run` (issue 22, "done means"): the steps
are read from README.md ("The loop in the browser, on `make run`"), driven in chromium with the
helpers of tests/browser.py against the embedded defaults `make run` uses (SQLite, the
filesystem Celery transport, a real worker process with beat, the local backend, `seed_demo`),
and each step's outcome the README promises is asserted. No field is filled that the README
does not mention: the trial's project and sentence; the job and the sweep run on the forms'
defaults.

Kept cheap without losing what it proves (it was ~612 s): the default job trains to success
(its metrics, intervals, confusion matrices, ROC curve and charge are step 2's promise); the
default sweep is launched (6 cells), and followed until its first cell has finished and filled
in its leaderboard row ("fills in its cells and leaderboard as they finish"); the 5 other cells
are stopped with the portal, not trained. The full sweep's figures are bench/bench_readme_defaults.py's.
Everything runs in a var folder of the test's own (PORTAL_VAR_DIR). Bounds below only keep a
broken loop from hanging the suite."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from decimal import ROUND_UP, Decimal
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.browser import login
from tests.launcher.local_fixtures import stop_all
from tests.worker import stop_process

pytestmark = pytest.mark.timeout(3600)
ROOT = Path(__file__).resolve().parents[2]
MINUTE = 60_000


def readme_steps() -> list[str]:
    """The numbered steps of the README's browser loop, each as one line of text."""
    text = (ROOT / "README.md").read_text()
    loop = text.split("The loop in the browser, on `make run`:", 1)[1].split("\n\n", 2)[1]
    steps = re.split(r"^\d\. ", loop, flags=re.MULTILINE)[1:]
    return [" ".join(step.split()) for step in steps]


def quoted(step: str) -> list[str]:
    """The labels a step tells the user to click, in its order ("Submit request", ...)."""
    return re.findall(r'"([^"]+)"', step)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def embedded_portal(member_tmp):
    """`make run` in a folder of its own: migrate, seed_demo, a worker with beat, runserver.
    A folder members' uids can pass through, as `make run`'s var/ is: the jobs run as them."""
    tmp_path = member_tmp
    port = free_port()
    env = {
        k: v
        for k, v in os.environ.items()
        if k
        not in (
            "DATABASE_URL",
            "CELERY_BROKER_URL",
            "CELERY_TASK_ALWAYS_EAGER",
            "AWS_ENDPOINT_URL",
            "SECRET_KEY",
            "DJANGO_SETTINGS_MODULE",
        )
    }
    env.update(
        DEBUG="true",
        PORTAL_VAR_DIR=str(tmp_path / "var"),
        PORTAL_BASE_URL=f"http://127.0.0.1:{port}",
        EMAIL_URL="console://",
    )
    manage = [sys.executable, "manage.py"]
    subprocess.run(
        [*manage, "migrate", "--noinput"], cwd=ROOT, env=env, check=True, capture_output=True
    )
    subprocess.run(
        [*manage, "seed_demo", "--password", "demo"],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
    )
    logs = tmp_path / "var"
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "portal",
            "worker",
            "-B",
            "--pool",
            "solo",
            "--loglevel",
            "INFO",
            "--schedule",
            str(logs / "celerybeat-schedule"),
        ],
        cwd=ROOT,
        env=env,
        stdout=open(logs / "worker.log", "w"),
        stderr=subprocess.STDOUT,
    )
    server = subprocess.Popen(
        [*manage, "runserver", "--noreload", f"127.0.0.1:{port}"],
        cwd=ROOT,
        env=env,
        stdout=open(logs / "server.log", "w"),
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, (
                    logs / "server.log"
                ).read_text()
                time.sleep(0.5)
        yield SimpleNamespace(url=f"http://127.0.0.1:{port}"), logs
    finally:
        stop_process(server)
        stop_process(worker, timeout=30)
        stop_all(logs / "local-jobs")  # the sweep cells not trained (detached processes)


def test_the_readmes_browser_loop_word_for_word_on_make_run(embedded_portal, chromium):
    server, logs = embedded_portal
    base = server.url
    # Steps 1-3; step 4 (a notebook) needs the hub and is tests/notebooks/test_browser_notebook.py's.
    step1, step2, step3, step4 = readme_steps()
    assert "Open a notebook" in step4
    assert step1.startswith(
        "Log in as `researcher` and open `/requests/new/?facility=local&kind=trial`"
    )
    assert quoted(step1) == ["Submit request"] and quoted(step2)[0] == "Launch job"
    assert quoted(step3)[:2] == ["Launch a sweep", "Fill in the CLAIRE grid"]
    assert quoted(step3)[2:] == ["Estimate", "Launch sweep"]
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(2 * MINUTE)
    try:
        # 1. Log in as researcher, open the trial form: pick the project, write a sentence,
        # "Submit request". Pre-filled: the trial cap (stated under the field) and local-cpu.
        login(page, server, "researcher", password="demo")
        page.goto(base + re.search(r"open `([^`]+)`", step1).group(1))
        # `local` has no GPU: its hours are CPU-hours (allocations/units.py).
        hours = page.get_by_label("CPU-hours requested")
        cap = re.search(
            r"capped at (\d+(?:\.\d+)?) CPU-hours", page.locator("#id_gpu_hours_help").inner_text()
        ).group(1)
        assert float(hours.input_value()) == float(cap)
        assert "local-cpu" in page.locator("#id_node_type option:checked").inner_text()
        page.get_by_label("Project").select_option(index=1)
        page.get_by_label("Platform justification").fill(
            "Trying the CT classifier before a cluster."
        )
        page.get_by_role("button", name=quoted(step1)[0]).click()
        # "approved by policy and the worker makes the allocation active within seconds"
        allocation_link = page.locator('main a[href^="/allocations/"]').first
        allocation_link.wait_for()
        allocation_url = base + allocation_link.get_attribute("href")
        for _ in range(120):
            page.goto(allocation_url)
            if page.locator("#launch-form").count():
                break
            page.wait_for_timeout(1000)

        # 2. "Launch job" with the form's defaults: DenseNet-121 on 300 synthetic CT images at
        # 64 px for 8 epochs; the wall time follows the prediction, as the note says.
        form = page.locator("#launch-form")
        assert form.get_by_label("Model").input_value() == "densenet121" and "DenseNet-121" in step2
        assert (
            form.get_by_label("Synthetic images").input_value() == "300"
            and "300 synthetic CT" in step2
        )
        assert (
            form.get_by_label("Image size (pixels)").input_value() == "64" and "at 64 px" in step2
        )
        assert form.get_by_label("Epochs").input_value() == "8" and "for 8 epochs" in step2
        assert int(form.locator('input[name$="wall_time_minutes"]').input_value()) >= 30
        assert "predict" in form.locator('[id$="wall_time_minutes_help"]').inner_text().lower()
        form.get_by_role("button", name=quoted(step2)[0]).click()
        page.wait_for_url(re.compile(r".*/jobs/\d+/$"))
        job_api = page.url.replace("/jobs/", "/api/v1/jobs/")
        page.evaluate("window.notReloaded = true")
        # followed live: state, epoch, loss, ETA, log
        page.wait_for_function(
            "() => document.querySelector('#job-state .status').textContent === 'Running'"
        )
        page.wait_for_function(
            "() => !document.getElementById('job-epoch').textContent.startsWith('-')",
            timeout=20 * MINUTE,
        )
        page.wait_for_function("() => document.getElementById('job-loss').textContent !== '-'")
        assert page.locator("#job-log").inner_text().strip()
        job = page.request.get(job_api).json()
        assert job["estimate_source"] != "wall-time"  # reserves the predicted GPU-hours
        # once it has succeeded: metrics with 95% intervals, confusion matrices, ROC, charge
        page.locator("#metrics-table").wait_for(timeout=40 * MINUTE)
        assert page.evaluate("window.notReloaded") is True
        assert page.locator("#job-state .status").inner_text() == "Succeeded", page.locator(
            "#job-log"
        ).inner_text()
        assert "95% interval" in page.locator("#metrics-table thead").inner_text()
        assert (
            page.locator("table.confusion").count() == 2 and page.locator("#chart-roc").count() == 1
        )
        accuracy = float(
            page.locator('#metrics-table tr[data-metric="accuracy"] td').nth(1).inner_text()
        )
        assert accuracy >= 0.8
        page.wait_for_function(
            "() => !document.getElementById('job-charged').textContent.startsWith('0 CPU')"
        )
        assert "CPU-hours" in page.locator("#job-charged").inner_text()
        job = page.request.get(job_api).json()
        charged_s = job["gpu_seconds"]
        # Reserved: the limit, wall time x GPUs (exactly). The prediction beside it set the
        # default wall time, with its margin; its ratio to the charge (issue 22: within 2x on a
        # quiet machine) is printed, not asserted: the charge is the wall time, which the
        # machine's load stretches; bench/bench_readme_defaults.py reports it.
        limit = Decimal(job["wall_time_minutes"] * job["gpus"]) / 60
        assert job["estimate_gpu_hours"] == float(
            limit.quantize(Decimal("0.001"), rounding=ROUND_UP)
        )
        predicted_s = float(job["predicted_hours"]) * job["gpus"] * 3600
        print(
            f"default job: predicted {predicted_s:.0f} GPU-s ({job['estimate_source']}), "
            f"wall time {job['wall_time_minutes']} min reserved, charged {charged_s} GPU-s"
        )
        assert job["estimate_source"] != "wall-time" and charged_s > 0 and predicted_s > 0

        # 3. "Launch a sweep" below the jobs, defaults 2 learning rates x 3 folds; "Estimate"
        # shows the total and its basis before anything launches; then "Launch sweep".
        page.goto(allocation_url)
        page.locator("#launch-sweep summary").filter(has_text=quoted(step3)[0]).click()
        sweep_form = page.locator("#sweep-form")
        assert len(sweep_form.get_by_label("Learning rates").input_value().split(",")) == 2
        assert sweep_form.get_by_label("Folds").input_value() == "3"
        sweep_form.get_by_role("button", name=quoted(step3)[2]).click()
        # (the server's rendering, then sweep_form.js's: the same numbers from the API)
        page.wait_for_function(
            "() => document.getElementById('sweep-estimate').textContent"
            ".includes('CPU-hours in total')"
        )
        assert re.search(
            r"[\d.]+ CPU-hours in total, \w+ [\d.]+: .+ \(\w[\w-]*\)",
            page.locator("#sweep-estimate").inner_text(),
        )
        assert page.request.get(f"{base}/api/v1/sweeps/").json()["count"] == 0  # nothing launched
        page.locator("#sweep-form").get_by_role("button", name=quoted(step3)[3]).click()
        page.wait_for_url(re.compile(r".*/sweeps/\d+/$"))
        sweep = page.request.get(page.url.replace("/sweeps/", "/api/v1/sweeps/")).json()
        print(
            f"default sweep: estimate {sweep['estimate_gpu_hours']} GPU-h for {sweep['size']} cells"
        )
        assert sweep["size"] == 6
        # "fills in its cells and leaderboard as they finish": the first cell, live
        page.evaluate("window.notReloaded = true")
        page.wait_for_function(
            "() => document.getElementById('sweep-finished').textContent === '1'",
            timeout=30 * MINUTE,
        )
        page.wait_for_function(
            "() => /^\\d\\.\\d{3}/.test(document.querySelector("
            "'#leaderboard tbody tr td:nth-child(7)')?.textContent || '')"
        )
        row = page.locator("#leaderboard tbody tr").first.locator("td").all_inner_texts()
        assert row[1] == "densenet121" and row[5] == "1/3", row
        assert page.evaluate("window.notReloaded") is True
    finally:
        context.close()
