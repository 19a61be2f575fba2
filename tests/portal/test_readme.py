"""The README is tested (issue 22): its API example block, the curl lines a newcomer copies,
runs verbatim in bash against a live portal (only `localhost:8000` is replaced by the live
server's address) on the demo world `make run` loads, with the trial the README's browser
loop makes: allocation 1 on the `local` facility. A broken example (a refused token body, a
sweep that does not fit the trial) fails here.

Tasks the API enqueues go to a private queue no worker listens on (as tests/portal/api_server.py
does), so the launches are accepted and checked, and nothing trains on the test machine; the
trained loop is tests/launcher/test_make_run_loop.py's."""
from __future__ import annotations

import json
import os
import re
import subprocess
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.utils import timezone

from allocations import services
from allocations.models import Allocation, Facility, Project

pytestmark = [pytest.mark.django_db(transaction=True, reset_sequences=True)]
README = Path(settings.BASE_DIR) / "README.md"
PLACEHOLDER = "localhost:8000"


def code_blocks(text: str) -> list[str]:
    return re.findall(r"```(?:sh|bash|console)\n(.*?)```", text, re.S)


def api_block() -> str:
    blocks = [b for b in code_blocks(README.read_text()) if f"{PLACEHOLDER}/api/v1/" in b]
    assert len(blocks) == 1, "the README has one API example block"
    return blocks[0]


def json_documents(text: str) -> list:
    """Each JSON document curl and jq printed, in order."""
    decoder, docs, at = json.JSONDecoder(), [], 0
    while at < len(text):
        if text[at].isspace():
            at += 1
            continue
        doc, at = decoder.raw_decode(text, at)
        docs.append(doc)
    return docs


@pytest.fixture
def quiet_queue():
    from portal.celery import app

    old = (app.conf.task_always_eager, app.conf.task_default_queue)
    queue = f"readme-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    app.conf.task_always_eager, app.conf.task_default_queue = False, queue
    yield
    app.conf.task_always_eager, app.conf.task_default_queue = old
    with app.connection_for_write() as connection:
        connection.default_channel.queue_delete(queue)


@pytest.fixture
def after_the_browser_loop(live_server, quiet_queue):
    """`make run`'s world after step 1 of the README's browser loop: the researcher's trial on
    `local`, with the values the form pre-fills (the cap, the facility's only node type)."""
    call_command("seed_demo", password="demo", verbosity=0)
    project = Project.objects.get(code="ABC-DEF-001")
    researcher = project.memberships.get(user__username="researcher").user
    local = Facility.objects.get(slug="local")
    today = timezone.localdate()
    services.request_create(by=researcher, project=project, submit=True, facility=local,
                            kind="trial", gpu_hours=local.trial_gpu_hours_cap,
                            justification="Trying the CT classifier.", start_date=today,
                            end_date=today + timezone.timedelta(days=local.trial_days))
    allocation = Allocation.objects.get()
    # The worker's provisioning, which this test's queue does not run: the local backend
    # needs no account, so the allocation is simply active.
    Allocation.objects.filter(pk=allocation.pk).update(status="active",
                                                       account_name="abc-def-001-local-1")
    assert allocation.pk == 1 and allocation.node_type.name == "local-cpu"
    return live_server.url


def test_the_readme_api_example_runs_verbatim(after_the_browser_loop):
    base = after_the_browser_loop.removeprefix("http://")
    script = "set -euo pipefail\n" + api_block().replace(PLACEHOLDER, base)
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    job, job_view, sweep, counts, best = json_documents(done.stdout)

    assert job["id"] == 1 and job["state"] == "queued", job
    assert job["estimate_source"] != "wall-time", job  # predicted: the trial's hours go to work
    assert set(job_view) == {"state", "percent", "progress", "metrics"}
    assert job_view["state"] == "queued" and job_view["percent"] == 0
    assert sweep["id"] == 1 and sweep["size"] == 6, sweep  # 2 learning rates x 3 folds
    assert counts["queued"] == 6 and best["folds_done"] == 0  # nothing has run yet
