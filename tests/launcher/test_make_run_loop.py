"""Issue 10's "done means", end to end on the embedded defaults `make run` uses: SQLite, the
filesystem Celery transport, a real worker process with beat, the local backend. A researcher
logs in, gets a trial on the `local` facility (auto-approved, provisioned by the worker),
launches the default job from the allocation page, watches it run and succeed with its metrics
and the GPU-hours charged to the allocation; then a sweep launched from the same page runs to a
leaderboard. Everything runs in a var folder of the test's own (PORTAL_VAR_DIR).

Bounds below only keep a broken loop from hanging the suite; the default job trains for a few
minutes on a quiet 2-core machine and longer on a loaded one."""
from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from decimal import ROUND_UP, Decimal
from pathlib import Path

import pytest

from tests.worker import stop_process

pytestmark = [pytest.mark.browser, pytest.mark.timeout(3600)]
ROOT = Path(__file__).resolve().parents[2]
MINUTE = 60_000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def embedded_portal(tmp_path):
    """`make run` in a folder of its own: migrate, seed_demo, a worker with beat, runserver."""
    port = free_port()
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "CELERY_TASK_ALWAYS_EAGER", "AWS_ENDPOINT_URL",
                        "SECRET_KEY", "DJANGO_SETTINGS_MODULE")}
    env.update(DEBUG="true", PORTAL_VAR_DIR=str(tmp_path / "var"), PORTAL_BASE_URL=f"http://127.0.0.1:{port}",
               EMAIL_URL="console://")
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "--noinput"], cwd=ROOT, env=env, check=True, capture_output=True)
    subprocess.run([*manage, "seed_demo", "--password", "demo"], cwd=ROOT, env=env, check=True,
                   capture_output=True)
    logs = tmp_path / "var"
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "portal", "worker", "-B", "--pool", "solo", "--loglevel", "INFO",
         "--schedule", str(logs / "celerybeat-schedule")],
        cwd=ROOT, env=env, stdout=open(logs / "worker.log", "w"), stderr=subprocess.STDOUT)
    server = subprocess.Popen([*manage, "runserver", "--noreload", f"127.0.0.1:{port}"], cwd=ROOT, env=env,
                              stdout=open(logs / "server.log", "w"), stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, (logs / "server.log").read_text()
                time.sleep(0.5)
        yield f"http://127.0.0.1:{port}", logs
    finally:
        stop_process(server)
        stop_process(worker, timeout=30)


def test_a_researcher_runs_the_whole_loop_on_make_run(embedded_portal, chromium):
    base, logs = embedded_portal
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(2 * MINUTE)
    try:
        page.goto(f"{base}/accounts/login/")
        page.get_by_label("Username").fill("researcher")
        page.get_by_label("Password").fill("demo")
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url(f"{base}/")

        # The README's step 1 word for word: pick the project, write a sentence, "Submit
        # request"; the form pre-fills the rest (the trial cap, local's only node type).
        page.goto(f"{base}/requests/new/?facility=local&kind=trial")
        assert page.get_by_label("GPU hours requested").input_value() != ""
        project = page.get_by_label("Project")
        project.select_option(index=1)
        justification = page.get_by_label("Platform justification")
        justification.fill("Trying the CT classifier on the local workstation before a cluster.")
        page.get_by_role("button", name="Submit request").click()
        allocation_link = page.locator('a[href^="/allocations/"]').first
        allocation_link.wait_for()
        allocation_url = base + allocation_link.get_attribute("href")
        for _ in range(120):  # until the worker has provisioned it and the form shows
            page.goto(allocation_url)
            if page.locator("#launch-form").count():
                break
            page.wait_for_timeout(1000)

        # The default job, launched from the page, followed live to success.
        page.locator("#launch-form").get_by_role("button", name="Launch job").click()
        page.wait_for_url(re.compile(r".*/jobs/\d+/$"))
        job_url = page.url
        page.evaluate("window.notReloaded = true")
        page.wait_for_function("() => ['Running', 'Succeeded'].includes("
                               "document.querySelector('#job-state .status').textContent)",
                               timeout=20 * MINUTE)
        page.locator("#metrics-table").wait_for(timeout=40 * MINUTE)
        assert page.evaluate("window.notReloaded") is True
        assert page.locator("#job-state .status").inner_text() == "Succeeded", page.locator("#job-log").inner_text()
        accuracy = float(page.locator('#metrics-table tr[data-metric="accuracy"] td').nth(1).inner_text())
        assert accuracy >= 0.8
        assert page.locator("#job-cancel").count() == 0
        charged = page.locator("#job-charged")
        page.wait_for_function("() => !document.getElementById('job-charged').textContent.startsWith('0 GPU')")
        assert "GPU-seconds" in charged.inner_text()

        # The job's GPU-seconds are charged to the allocation, once. The allocations API
        # gives GPU-hours to 2 decimals (18 s), so compare within that.
        job_api = job_url.replace("/jobs/", "/api/v1/jobs/")
        charged_s = page.request.get(job_api).json()["gpu_seconds"]
        allocation_api = allocation_url.replace("/allocations/", "/api/v1/allocations/")
        for _ in range(120):  # the beat's usage ingestion runs every few seconds
            body = page.request.get(allocation_api).json()
            used_s = body.get("gpu_seconds_used", float(body["gpu_hours_used"]) * 3600)
            if used_s:
                break
            page.wait_for_timeout(1000)
        assert charged_s > 0 and abs(used_s - charged_s) <= 18, (charged_s, used_s)
        # Reserved: the limit, wall time x GPUs. The prediction beside it (which set the default
        # wall time, with its margin) is within 2x of what the run was charged.
        job_body = page.request.get(job_api).json()
        limit = Decimal(job_body["wall_time_minutes"] * job_body["gpus"]) / 60
        assert Decimal(job_body["estimate_gpu_hours"]) == limit.quantize(Decimal("0.001"),
                                                                          rounding=ROUND_UP)
        predicted_s = float(job_body["predicted_hours"]) * job_body["gpus"] * 3600
        print(f"default job: predicted {predicted_s:.0f} GPU-s ({job_body['estimate_source']}), "
              f"wall time {job_body['wall_time_minutes']} min reserved, charged {charged_s} GPU-s")
        assert job_body["estimate_source"] != "wall-time"
        assert charged_s / 2 <= predicted_s <= charged_s * 2, (predicted_s, charged_s)
        page.goto(allocation_url)

        # The README's step 3 with the form's defaults: 2 learning rates x 3 folds.
        page.locator("#launch-sweep summary").click()
        form = page.locator("#sweep-form")
        form.get_by_role("button", name="Launch sweep").click()
        page.wait_for_url(re.compile(r".*/sweeps/\d+/$"))
        page.wait_for_function("() => document.getElementById('sweep-finished').textContent === '6'",
                               timeout=50 * MINUTE)
        row = page.locator("#leaderboard tbody tr").first.locator("td").all_inner_texts()
        assert row[1] == "densenet121" and row[5] == "3/3" and re.match(r"\d\.\d{3}", row[6]), row
        sweep_body = page.request.get(page.url.replace("/sweeps/", "/api/v1/sweeps/")).json()
        print(f"default sweep: estimate {sweep_body['estimate_gpu_hours']} GPU-h for "
              f"{sweep_body['size']} cells")
        assert job_url
    finally:
        context.close()
