"""The probe's findings about launching (issue 34), each a wrong answer or a silence before:

6. a retried launch made a second job: `Idempotency-Key` on jobs/, sweeps/ and notebooks/;
7. a job queued while no worker runs said nothing: the job page and the API say so.

The other findings: test_probe_input_limits.py (1, 2, 3, 5) and test_probe_logout.py (4).
"""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from launcher import heartbeat, idempotency
from launcher.models import IdempotencyKey, Job, Sweep, WorkerHeartbeat
from launcher.notebooks.models import NotebookSession
from tests.notebooks.fixtures import nb_allocation, nb_dirs, nb_facility  # noqa: F401 (fixtures)
from tests.portal.probe_helpers import GRID, allocation  # noqa: F401 (fixture)

pytestmark = [pytest.mark.django_db]


# 6. Idempotency keys -----------------------------------------------------------------------


def test_the_same_key_returns_the_first_job_instead_of_a_second(api, researcher, allocation):
    client = api.as_user(researcher)
    body = {"allocation": allocation.pk, "gpus": 1, "wall_time_minutes": 30}
    first = client.post("/api/v1/jobs/", body, format="json", HTTP_IDEMPOTENCY_KEY="launch-1")
    again = client.post("/api/v1/jobs/", body, format="json", HTTP_IDEMPOTENCY_KEY="launch-1")

    assert first.status_code == again.status_code == 201, again.json()
    assert again.json()["id"] == first.json()["id"] and again["Idempotent-Replayed"] == "true"
    assert Job.objects.count() == 1
    row = IdempotencyKey.objects.get()
    assert (row.user, row.key, row.kind, row.object_id) == (
        researcher,
        "launch-1",
        "job",
        first.json()["id"],
    )
    other = client.post("/api/v1/jobs/", body, format="json", HTTP_IDEMPOTENCY_KEY="launch-2")
    assert other.status_code == 201 and other.json()["id"] != first.json()["id"]


def test_the_same_key_with_another_body_is_a_409_and_changes_nothing(api, researcher, allocation):
    client = api.as_user(researcher)
    body = {"allocation": allocation.pk, "gpus": 1, "wall_time_minutes": 30}
    assert (
        client.post("/api/v1/jobs/", body, format="json", HTTP_IDEMPOTENCY_KEY="k").status_code
        == 201
    )
    changed = client.post(
        "/api/v1/jobs/", {**body, "wall_time_minutes": 31}, format="json", HTTP_IDEMPOTENCY_KEY="k"
    )
    assert changed.status_code == 409
    assert "Idempotency-Key" in changed.json()["detail"]
    elsewhere = client.post(
        "/api/v1/sweeps/", {**body, "grid": GRID}, format="json", HTTP_IDEMPOTENCY_KEY="k"
    )
    assert elsewhere.status_code == 409
    assert Job.objects.count() == 1 and not Sweep.objects.exists()


def test_keys_are_per_user_and_expire_after_a_day(api, researcher, pi, allocation):
    body = {"allocation": allocation.pk, "gpus": 1, "wall_time_minutes": 30}
    mine = api.as_user(researcher).post(
        "/api/v1/jobs/", body, format="json", HTTP_IDEMPOTENCY_KEY="same"
    )
    theirs = api.as_user(pi).post("/api/v1/jobs/", body, format="json", HTTP_IDEMPOTENCY_KEY="same")
    assert mine.status_code == theirs.status_code == 201
    assert mine.json()["id"] != theirs.json()["id"]

    IdempotencyKey.objects.update(created_at=timezone.now() - dt.timedelta(hours=25))
    later = api.as_user(researcher).post(
        "/api/v1/jobs/", {**body, "name": ""}, format="json", HTTP_IDEMPOTENCY_KEY="same"
    )  # another body: new key
    assert later.status_code == 201 and Job.objects.count() == 3
    assert idempotency.prune() == 1 and IdempotencyKey.objects.get().object_id == later.json()["id"]


def test_a_refused_launch_keeps_no_key(api, researcher, allocation):
    client = api.as_user(researcher)
    refused = client.post(
        "/api/v1/jobs/",
        {"allocation": allocation.pk, "gpus": 2},
        format="json",
        HTTP_IDEMPOTENCY_KEY="retry-me",
    )
    assert refused.status_code == 400 and not IdempotencyKey.objects.exists()
    fixed = client.post(
        "/api/v1/jobs/",
        {"allocation": allocation.pk, "gpus": 1},
        format="json",
        HTTP_IDEMPOTENCY_KEY="retry-me",
    )
    assert fixed.status_code == 201


@pytest.mark.parametrize("key", ["", " ", "x" * 256, "caf\u00e9"])
def test_a_malformed_key_is_a_400(api, researcher, allocation, key):
    response = api.as_user(researcher).post(
        "/api/v1/jobs/",
        {"allocation": allocation.pk, "gpus": 1},
        format="json",
        HTTP_IDEMPOTENCY_KEY=key,
    )
    assert response.status_code == 400 and "Idempotency-Key" in response.json()
    assert not Job.objects.exists()


def test_sweeps_and_notebooks_take_a_key_too(api, researcher, allocation, nb_allocation):
    client = api.as_user(researcher)
    body = {"allocation": allocation.pk, "gpus": 1, "wall_time_minutes": 30, "grid": GRID}
    first = client.post("/api/v1/sweeps/", body, format="json", HTTP_IDEMPOTENCY_KEY="s")
    again = client.post("/api/v1/sweeps/", body, format="json", HTTP_IDEMPOTENCY_KEY="s")
    assert first.status_code == again.status_code == 201
    assert first.json()["id"] == again.json()["id"] and Sweep.objects.count() == 1

    as_job = client.post(
        "/api/v1/jobs/", {**body, "workload": "sweep"}, format="json", HTTP_IDEMPOTENCY_KEY="js"
    )
    as_job_again = client.post(
        "/api/v1/jobs/", {**body, "workload": "sweep"}, format="json", HTTP_IDEMPOTENCY_KEY="js"
    )
    assert as_job.json()["id"] == as_job_again.json()["id"] and Sweep.objects.count() == 2

    nb = {"allocation": nb_allocation.pk, "gpus": 1, "hours": 1}
    first = client.post("/api/v1/notebooks/", nb, format="json", HTTP_IDEMPOTENCY_KEY="n")
    again = client.post("/api/v1/notebooks/", nb, format="json", HTTP_IDEMPOTENCY_KEY="n")
    assert first.status_code == again.status_code == 201, again.json()
    assert first.json()["id"] == again.json()["id"] and NotebookSession.objects.count() == 1
    assert again["Idempotent-Replayed"] == "true"


def test_the_schema_declares_the_header(api, researcher):
    schema = api.as_user(researcher).get("/api/v1/schema/", {"format": "json"}).json()
    for path in ("/api/v1/jobs/", "/api/v1/sweeps/", "/api/v1/notebooks/"):
        params = schema["paths"][path]["post"].get("parameters", [])
        header = [p for p in params if p["name"] == "Idempotency-Key"]
        assert header and header[0]["in"] == "header" and not header[0].get("required"), path
        assert "409" in schema["paths"][path]["post"]["responses"], path
    job = schema["components"]["schemas"]["JobOut"]["properties"]
    assert "queue_notice" in job


# 7. A queued job says when nobody serves the queue ---------------------------------------


def queued_job(allocation, researcher, *, seconds_ago: int) -> Job:
    job = Job.objects.create(
        allocation=allocation,
        created_by=researcher,
        gpus=1,
        wall_time_minutes=10,
        params={"model": "resnet18", "epochs": 2},
        token=f"portal-job-probe-{seconds_ago}",
    )
    Job.objects.filter(pk=job.pk).update(
        created_at=timezone.now() - dt.timedelta(seconds=seconds_ago)
    )
    return job


def test_a_job_queued_with_no_worker_says_so(api, client, researcher, allocation, settings):
    WorkerHeartbeat.objects.all().delete()
    job = queued_job(allocation, researcher, seconds_ago=600)
    body = api.as_user(researcher).get(f"/api/v1/jobs/{job.pk}/").json()
    assert "not being served" in body["queue_notice"]
    client.force_login(researcher)
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "not being served" in page

    heartbeat.beat()  # a worker is alive: nothing to say
    assert api.as_user(researcher).get(f"/api/v1/jobs/{job.pk}/").json()["queue_notice"] is None
    assert "not being served" not in client.get(f"/jobs/{job.pk}/").content.decode()


def test_a_fresh_job_or_a_stale_beat_long_ago_is_judged_by_age(
    api, researcher, allocation, settings
):
    WorkerHeartbeat.objects.all().delete()
    fresh = queued_job(allocation, researcher, seconds_ago=5)
    assert api.as_user(researcher).get(f"/api/v1/jobs/{fresh.pk}/").json()["queue_notice"] is None
    heartbeat.beat(
        at=timezone.now() - dt.timedelta(seconds=settings.PORTAL_WORKER_STALE_SECONDS + 5)
    )
    old = queued_job(allocation, researcher, seconds_ago=600)
    assert (
        "not being served"
        in api.as_user(researcher).get(f"/api/v1/jobs/{old.pk}/").json()["queue_notice"]
    )
    Job.objects.filter(pk=old.pk).update(state="running")
    assert api.as_user(researcher).get(f"/api/v1/jobs/{old.pk}/").json()["queue_notice"] is None


def test_the_heartbeat_task_is_on_the_beat_and_marks_the_worker_alive(settings):
    from launcher import tasks

    WorkerHeartbeat.objects.all().delete()
    assert heartbeat.last_beat() is None
    schedule = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert "launcher.heartbeat" in schedule
    tasks.heartbeat.delay()
    assert heartbeat.worker_alive()
