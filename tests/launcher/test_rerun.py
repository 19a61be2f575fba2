"""Run again: a job relaunched with its parameters and seed on the local backend gives the same
metrics, exactly, on the same processor; the page and the API both offer it, to the people who
may launch on the allocation and no one else."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from launcher import services
from launcher.models import Job
from tests.launcher.local_fixtures import (  # noqa: F401
    QUICK,
    jobs_dir,
    launch,
    local_allocation,
    local_facility,
    poll_until,
)

pytestmark = pytest.mark.django_db

REPRODUCED = (
    "slice",
    "patient",
    "history",
    "best_epoch",
    "loss",
    "samples",
    "seed",
    "data_fingerprint",
)


def _run(job: Job) -> Job:
    services.job_submit(job_id=job.pk)
    return poll_until(job, {"succeeded"})


def test_a_job_run_again_gives_identical_metrics(local_allocation, researcher):
    first = _run(launch(local_allocation, researcher, {**QUICK, "epochs": 2, "seed": 7}))
    again = services.job_rerun(job=first, by=researcher)
    assert again.pk != first.pk and again.allocation_id == first.allocation_id
    assert again.params == first.params and again.params["seed"] == 7
    assert (again.gpus, again.wall_time_minutes) == (first.gpus, first.wall_time_minutes)
    again = _run(again)
    assert first.metrics["data_fingerprint"].startswith("sha256:")
    assert first.metrics["seed"] == 7
    for key in REPRODUCED:
        assert again.metrics[key] == first.metrics[key], key


def test_every_job_records_its_seed(local_allocation, researcher):
    client = APIClient()
    client.force_authenticate(researcher)
    response = client.post(
        "/api/v1/jobs/", {"allocation": local_allocation.pk, "params": {**QUICK}}, format="json"
    )
    assert response.status_code == 201, response.json()
    assert Job.objects.get(pk=response.json()["id"]).params["seed"] == 0


def test_run_again_through_the_api_and_the_page(local_allocation, researcher, outsider, client):
    first = launch(local_allocation, researcher, {**QUICK, "seed": 3})
    api = APIClient()
    api.force_authenticate(researcher)
    response = api.post(f"/api/v1/jobs/{first.pk}/rerun/")
    assert response.status_code == 201, response.json()
    rerun = Job.objects.get(pk=response.json()["id"])
    assert rerun.params == first.params

    client.force_login(researcher)
    page = client.get(f"/jobs/{first.pk}/")
    assert b'id="job-rerun"' in page.content and b'id="job-seed">3' in page.content
    response = client.post(f"/jobs/{first.pk}/rerun/")
    newest = Job.objects.latest("pk")
    assert newest.pk > rerun.pk and response.headers["Location"] == f"/jobs/{newest.pk}/"

    api.force_authenticate(outsider)
    before = Job.objects.count()
    assert api.post(f"/api/v1/jobs/{first.pk}/rerun/").status_code == 404
    client.force_login(outsider)
    assert client.post(f"/jobs/{first.pk}/rerun/").status_code == 404
    assert Job.objects.count() == before
