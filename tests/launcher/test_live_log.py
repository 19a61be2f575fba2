"""A running job's log carries the trainer's own lines as they are written (issue 39: the page
and `portal jobs logs` showed only the command line while the run was at epoch 3 of 8)."""

from __future__ import annotations

import re

import pytest

from launcher import services
from launcher.local import cells
from tests.launcher.local_fixtures import (  # noqa: F401
    LONG,
    cell_of,
    jobs_dir,
    launch,
    local_allocation,
    local_facility,
    training_started,
)
from tests.waiting import wait_for

pytestmark = pytest.mark.django_db

STEP_LINE = re.compile(r"^\d\d:\d\d:\d\d epoch 1/200 step \d+/\d+: loss \d+\.\d{4}", re.M)


def test_a_running_jobs_log_endpoint_returns_the_trainers_lines_before_it_ends(
    api, local_allocation, researcher
):
    job = launch(local_allocation, researcher, LONG)
    services.job_submit(job_id=job.pk)
    job.refresh_from_db()
    assert job.state == "running", job.state_reason
    wait_for(lambda: training_started(job), timeout=240, what="the first training step")
    client = api.as_user(researcher)

    # No monitor poll runs here: the endpoint reads the trainer's log itself.
    body = wait_for(
        lambda: (
            (r := client.get(f"/api/v1/jobs/{job.pk}/log/").json())
            and STEP_LINE.search(r["log"])
            and r
        ),
        timeout=120,
        every=0.5,
        what="a training step's line in the log endpoint",
    )

    assert body["state"] == "running"
    assert cells.read_json(cell_of(job) / cells.EXIT) is None  # the run has not ended
    lines = body["log"].splitlines()
    command = next(i for i, line in enumerate(lines) if line.startswith("portal: cell 0: "))
    first_step = next(i for i, line in enumerate(lines) if STEP_LINE.match(line))
    assert command < first_step  # the supervisor's command line, then the trainer's own lines
    services.job_cancel(job=job, by=researcher)
