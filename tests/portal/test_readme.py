"""The README and docs/ are tested (issue 22): every block of commands a user is told to run
with curl (the README's API example, docs/api.md's, docs/launcher.md's, docs/cloud.md's) runs
verbatim in bash against a live portal (only `localhost:8000` / `http://127.0.0.1:8000` is
replaced by the live server's address; a `make ...` line, which the live server stands for, is
left out) on the demo world `make run` loads, with the trial the README's browser loop makes:
allocation 1 on the `local` facility. A broken example (a refused token body, a sweep that does
not fit the trial, a date in the past) fails here, and so does a new curl block no test runs.

Tasks the API enqueues go to a private queue no worker listens on (as tests/portal/api_server.py
does), so the launches are accepted and checked, and nothing trains on the test machine; the
trained loop is tests/launcher/test_make_run_loop.py's."""

from __future__ import annotations

import json
import os
import re
import subprocess
import textwrap
import uuid
from decimal import Decimal
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.utils import timezone

from allocations import services
from allocations.models import Allocation, Facility, Project
from launcher.models import Job
from tests.factories import AllocationFactory, charge

pytestmark = [pytest.mark.django_db(transaction=True, reset_sequences=True)]
ROOT = Path(settings.BASE_DIR)
README = ROOT / "README.md"
PLACEHOLDERS = ("http://127.0.0.1:8000", "localhost:8000")


def code_blocks(text: str) -> list[str]:
    """The shell blocks of a Markdown text (fenced with sh, bash, console or nothing; a list
    item's indented block is dedented)."""
    found = re.findall(r"^ *```(?:sh|bash|console)?\n(.*?)^ *```", text, re.S | re.MULTILINE)
    return [textwrap.dedent(body) for body in found]


def curl_blocks(path: Path) -> list[str]:
    """The blocks of `path` that run curl against the portal."""
    return [
        b
        for b in code_blocks(path.read_text())
        if "curl " in b and any(f"{p}/api/v1/" in b for p in PLACEHOLDERS)
    ]


def api_block() -> str:
    blocks = curl_blocks(README)
    assert len(blocks) == 1, "the README has one API example block"
    return blocks[0]


def doc_block(name: str, first_line: str) -> str:
    """The curl block of docs/<name> that starts with `first_line`."""
    blocks = [b for b in curl_blocks(ROOT / "docs" / name) if b.startswith(first_line)]
    assert len(blocks) == 1, f"docs/{name} has one block starting {first_line!r}"
    return blocks[0]


def run_verbatim(
    block: str, base_url: str, *, before: str = "", cwd: Path = ROOT
) -> subprocess.CompletedProcess:
    """Run a documented block in bash, strict, against the live server at `base_url`
    (`before`: lines the docs tell the user to set by hand, such as ALLOC=<the id>)."""
    lines = [
        line
        for line in (before + block)
        .replace(PLACEHOLDERS[0], base_url)
        .replace(PLACEHOLDERS[1], base_url.removeprefix("http://"))
        .splitlines()
        if not line.startswith("make ")
    ]  # the live server stands for `make run`
    script = "set -euo pipefail\n" + "\n".join(lines)
    done = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, timeout=180, check=False, cwd=cwd
    )
    assert done.returncode == 0, done.stderr
    return done


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
    services.request_create(
        by=researcher,
        project=project,
        submit=True,
        facility=local,
        kind="trial",
        gpu_hours=local.trial_gpu_hours_cap,
        justification="Trying the CT classifier.",
        start_date=today,
        end_date=today + timezone.timedelta(days=local.trial_days),
    )
    allocation = Allocation.objects.get()
    # The worker's provisioning, which this test's queue does not run: the local backend
    # needs no account, so the allocation is simply active.
    Allocation.objects.filter(pk=allocation.pk).update(
        status="active", account_name="abc-def-001-local-1"
    )
    assert allocation.pk == 1 and allocation.node_type.name == "local-cpu"
    return live_server.url


def test_the_readme_api_example_runs_verbatim(after_the_browser_loop):
    done = run_verbatim(api_block(), after_the_browser_loop)
    job, job_view, sweep, counts, best = json_documents(done.stdout)

    assert job["id"] == 1 and job["state"] == "queued", job
    assert job["estimate_source"] != "wall-time", job  # predicted: the trial's hours go to work
    assert set(job_view) == {"state", "percent", "progress", "metrics"}
    assert job_view["state"] == "queued" and job_view["percent"] == 0
    assert sweep["id"] == 1 and sweep["size"] == 6, sweep  # 2 learning rates x 3 folds
    assert counts["queued"] == 6 and best["folds_done"] == 0  # nothing has run yet


# docs/: each curl block a user is told to run, verbatim (the same machinery as the README's).
COVERED = {  # (file, first line of the block): the test that runs it
    (
        "api.md",
        "TOKEN=$(curl -s -X POST http://127.0.0.1:8000/api/v1/auth/token/ \\",
    ): "test_the_api_docs_first_example_runs_verbatim",
    (
        "api.md",
        "curl -s -H \"$H\" -H 'Content-Type: application/json' http://127.0.0.1:8000/api/v1/datasets/ -d '{",
    ): "test_the_api_docs_dataset_example_answers_what_it_says",
    (
        "api.md",
        "curl -s http://127.0.0.1:8000/api/v1/schema/?format=json > openapi.json",
    ): "test_the_api_docs_client_generation_runs_verbatim",
    (
        "api.md",
        "KEY=$(cat /proc/sys/kernel/random/uuid)   # any key of your own; a UUID is a good one",
    ): "test_the_api_docs_idempotency_example_launches_once",
    ("launcher.md", "make services && make run"): "test_the_launcher_docs_example_runs_verbatim",
    (
        "cloud.md",
        "TOKEN=$(curl -s -X POST localhost:8000/api/v1/auth/token/ -d username=researcher -d password=demo | jq -r .token)",
    ): "test_the_cloud_docs_steps_4_and_5_run_verbatim",
    (
        "cloud.md",
        "curl -s -H \"$H\" -H 'Content-Type: application/json' localhost:8000/api/v1/jobs/ -d '{",
    ): "test_the_cloud_docs_steps_4_and_5_run_verbatim",
    (
        "notebooks.md",
        "TOKEN=$(curl -s -X POST localhost:8000/api/v1/auth/token/ -d username=researcher -d password=demo | jq -r .token)",
    ): "test_the_notebooks_docs_example_runs_verbatim",
}
API_TOKEN_LINES = 3  # docs/api.md's first block opens with the token (2 lines) and the header


def test_every_curl_block_in_docs_is_run_by_a_test():
    found = {
        (path.name, block.splitlines()[0])
        for path in sorted((ROOT / "docs").glob("*.md"))
        for block in curl_blocks(path)
    }
    assert found == set(COVERED), "a docs/ curl block no test runs (or a stale entry)"
    assert all(name in globals() for name in COVERED.values())


def test_the_api_docs_first_example_runs_verbatim(after_the_browser_loop):
    done = run_verbatim(doc_block("api.md", "TOKEN="), after_the_browser_loop)
    *slugs_and_projects, trial = json_documents(done.stdout)

    assert {"local", "baskerville"} <= {d for d in slugs_and_projects if isinstance(d, str)}
    assert {"id": 1, "code": "ABC-DEF-001"} in slugs_and_projects
    assert trial["facility"] == "baskerville" and trial["kind"] == "trial", trial
    assert trial["status"] in ("approved", "submitted"), trial  # auto-approved where allowed


def test_the_api_docs_idempotency_example_launches_once(after_the_browser_loop):
    done = run_verbatim(doc_block("api.md", "KEY="), after_the_browser_loop, before=_api_header())
    first, again = json_documents(done.stdout)

    assert first["id"] == again["id"] == 1 and first["state"] == "queued", (first, again)
    assert Job.objects.count() == 1


def _api_header() -> str:
    """docs/api.md's first two lines (the token and the header), which later blocks rely on."""
    return "\n".join(doc_block("api.md", "TOKEN=").splitlines()[:API_TOKEN_LINES]) + "\n"


def test_the_api_docs_dataset_example_answers_what_it_says(after_the_browser_loop, tmp_path):
    """The block's comment says what a dataset folder that is a symlink into another project's
    gets: that 400, word for word."""
    local = Facility.objects.get(slug="local")
    local.backend_settings = {**local.backend_settings, "storage_root": str(tmp_path)}
    local.save()
    (tmp_path / "XYZ-OTHER" / "cxr").mkdir(parents=True)
    (tmp_path / "ABC-DEF-001" / "cxr").mkdir(parents=True)
    (tmp_path / "ABC-DEF-001" / "cxr" / "v1").symlink_to(tmp_path / "XYZ-OTHER" / "cxr")
    block = doc_block(
        "api.md",
        "curl -s -H \"$H\" -H 'Content-Type: application/json' "
        "http://127.0.0.1:8000/api/v1/datasets/",
    )
    said = json.loads(re.search(r"# 400 (\{.*\})", block).group(1))

    done = run_verbatim(block, after_the_browser_loop, before=_api_header())
    dataset, refused = json_documents(done.stdout)

    assert dataset["name"] == "cxr" and dataset["location"] == "cxr/v1", dataset
    assert refused == said
    assert not Job.objects.exists()


def test_the_api_docs_client_generation_runs_verbatim(after_the_browser_loop, tmp_path):
    (tmp_path / ".venv").symlink_to(ROOT / ".venv")
    block = doc_block("api.md", "curl -s http://127.0.0.1:8000/api/v1/schema/")
    run_verbatim(block, after_the_browser_loop, cwd=tmp_path)

    assert json.loads((tmp_path / "openapi.json").read_text())["openapi"].startswith("3.")
    # what the docs' Python example imports is there
    assert (tmp_path / "portal_client" / "api" / "auth" / "auth_token_create.py").is_file()
    assert (tmp_path / "portal_client" / "api" / "jobs" / "jobs_create.py").is_file()
    assert (
        "class LaunchInputRequest"
        in (tmp_path / "portal_client" / "models" / "launch_input_request.py").read_text()
    )


def test_the_launcher_docs_example_runs_verbatim(after_the_browser_loop):
    done = run_verbatim(
        doc_block("launcher.md", "make services && make run"), after_the_browser_loop
    )
    (job,) = json_documents(done.stdout)

    assert job["state"] == "queued" and job["wall_time_minutes"] == 5, job
    assert job["params"]["model"] == "resnet18" and job["params"]["epochs"] == 2


def test_the_cloud_docs_steps_4_and_5_run_verbatim(after_the_browser_loop):
    """Step 4 asks for a trial on local-cloud; the worker's provisioning (S3 prefix, a second
    or two, not run here: the queue is quiet) is done by hand; step 5 launches on it."""
    step4 = doc_block("cloud.md", "TOKEN=")
    done = run_verbatim(step4, after_the_browser_loop)
    trial, *allocations = json_documents(done.stdout)
    assert trial["facility"] == "local-cloud" and trial["status"] == "approved", trial
    cloud = Allocation.objects.get(facility__slug="local-cloud")
    assert {"id": cloud.pk, "facility": "local-cloud", "status": cloud.status} in allocations
    Allocation.objects.filter(pk=cloud.pk).update(status="active")

    step5 = doc_block(
        "cloud.md",
        "curl -s -H \"$H\" -H 'Content-Type: application/json' localhost:8000/api/v1/jobs/",
    )
    token_lines = "\n".join(step4.splitlines()[:2])  # step 4's TOKEN and H, still set
    done = run_verbatim(step5, after_the_browser_loop, before=f"{token_lines}\nALLOC={cloud.pk}\n")
    (job,) = json_documents(done.stdout)
    assert set(job) == {"id", "state", "estimate_cost"} and job["state"] == "queued", job


def test_the_notebooks_docs_example_runs_verbatim(after_the_browser_loop):
    # The queue is quiet (no hub here): the session is opened, reserved and stopped by the
    # portal; the hub's side is tests/notebooks' (test_hub_e2e, test_browser_notebook).
    done = run_verbatim(doc_block("notebooks.md", "TOKEN="), after_the_browser_loop)
    opened, seen, stopped = json_documents(done.stdout)

    assert opened["id"] == 1 and opened["state"] == "starting", opened
    assert opened["reserved_gpu_seconds"] == 2 * 3600 and "/nb-1/" in opened["url"], opened
    assert seen["state"] == "starting" and seen["gpu_seconds_so_far"] == 0, seen
    assert stopped["state"] == "stopping" and stopped["reason"], stopped


def cli_block() -> str:
    """The README's block of `portal` commands."""
    blocks = [b for b in code_blocks(README.read_text()) if ".venv/bin/portal login" in b]
    assert len(blocks) == 1, "the README has one command-line block"
    return blocks[0]


def test_the_readme_cli_reads_the_loops_allocation_not_the_newest(after_the_browser_loop, tmp_path):
    """The README's `portal login`, `portal allocations` and `allocations --json | jq` lines,
    verbatim, with a newer allocation of the researcher's listed first: the jq line gives the
    loop's allocation's GPU-hours left (a number, unrounded), not the newest one's. (The block's
    job lines train for real; tests/cli/test_cli_loop.py runs them.)"""
    trial = Allocation.objects.get(pk=1)
    charge(allocation=trial, source="local", external_id="readme-1", gpu_seconds=2829)
    AllocationFactory(
        project=trial.project, facility=Facility.objects.get(slug="local-slurm"), gpu_hours=50
    )
    lines = [
        line for line in cli_block().splitlines() if "portal login" in line or "allocations" in line
    ]
    assert len(lines) == 3 and "jq" in lines[-1]
    home = (
        f"export HOME={tmp_path} XDG_CONFIG_HOME={tmp_path}/config; unset PORTAL_URL PORTAL_TOKEN\n"
    )

    done = run_verbatim("\n".join(lines), after_the_browser_loop, before=home)

    left = float(done.stdout.strip().splitlines()[-1])
    assert left == float(trial.gpu_hours - Decimal(2829) / 3600)  # 400 - 0.78583...: not rounded
    listed = json.loads(
        subprocess.run(
            [str(ROOT / ".venv/bin/portal"), "allocations", "--json"],
            env={**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": f"{tmp_path}/config"},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    assert listed[0]["id"] != 1 and listed[0]["gpu_hours_remaining"] != left  # `.[0]` was wrong
