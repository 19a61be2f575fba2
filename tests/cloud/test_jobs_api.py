"""The cloud through the public jobs API: `POST /api/v1/jobs/` on an active allocation of an
`aws` facility provisions a spot worker, the emulated instance boots its user data and trains, the job succeeds with its
progress, metrics and log, and the instance time is charged to the allocation; a launch the
budget cannot pay for is a 409 with the numbers and launches nothing."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from allocations.models import UsageRecord
from launcher.cloud import clock
from launcher.cloud.client import aws_client
from launcher.cloud.models import CloudTask, Node
from launcher.cloud.tasks import sync_all
from launcher.models import Job
from launcher.tasks import poll_jobs
from tests.cloud.conftest import TRAINS_TO_END
from tests.factories import charge
from tests.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

PARAMS = {
    "model": "resnet18",
    "epochs": 2,
    "size": 32,
    "batch_size": 8,
    "lr": 0.001,
    "bootstrap": 50,
    "progress_every": 1,
    "seed": 1,
    "threads": 1,
    "deterministic": True,
    "dataset": "synthetic-ct",
    "synthetic_n": 48,
}


def _beat() -> None:
    """What celery beat does every few seconds: the cloud sync, then the launcher's poll."""
    sync_all()
    poll_jobs()


def _job(pk: int) -> Job:
    return Job.objects.get(pk=pk)


def test_a_job_posted_to_the_api_trains_on_a_spot_worker_and_is_charged(
    api, researcher, allocation, cluster, emulator
):
    client = api.as_user(researcher)
    response = client.post(
        "/api/v1/jobs/",
        {"allocation": allocation.pk, "gpus": 1, "wall_time_minutes": 30, "params": PARAMS},
        format="json",
    )
    assert response.status_code == 201, response.json()
    body = response.json()
    # The cloud's estimate: the catalogue's g5.xlarge spot price for the half-hour asked for.
    assert Decimal(body["estimate_cost"]) == Decimal("0.1810")
    job = _job(body["id"])
    task = CloudTask.objects.get(job_id=job.pk)
    assert job.state == "pending" and job.scheduler_id == task.token
    worker = Node.objects.get(pk=task.node_id)
    assert (worker.role, worker.market, worker.instance_type) == ("worker", "spot", "g5.xlarge")
    assert worker.instance_id in {
        i.instance_id for i in aws_client(cluster).find(cluster=str(cluster.pk), role="worker")
    }

    wait_for(
        lambda: _job(job.pk).state == "running",
        step=_beat,
        timeout=120,
        every=1.0,
        what="the job running",
    )
    clock.advance(180)  # three billed minutes pass on the worker
    wait_for(
        lambda: _job(job.pk).state in Job.FINAL,
        step=_beat,
        timeout=TRAINS_TO_END,
        every=1.0,
        what="the job's end",
    )

    shown = client.get(f"/api/v1/jobs/{job.pk}/").json()
    assert shown["state"] == "succeeded", shown["state_reason"]
    assert shown["progress"]["epoch"] == 2 and shown["progress"]["state"] == "succeeded"
    assert shown["progress"]["history"], "the loss history the job page plots"
    assert shown["metrics"]["synthetic_data"] is True and len(shown["metrics"]["history"]) == 2
    log = client.get(f"/api/v1/jobs/{job.pk}/log/").json()["log"]
    assert log and "epoch" in log.lower()
    assert [e["to_state"] for e in _events(job)][-2:] == ["running", "succeeded"]

    charges = UsageRecord.objects.filter(allocation=allocation, source="cloud")
    worker_charges = charges.filter(detail__node=worker.pk)
    assert worker_charges.exists() and set(charges.values_list("detail__role", flat=True)) == {
        "worker"
    }  # no head node billed
    assert sum(r.gpu_seconds for r in worker_charges) >= 120  # whole minutes of one GPU
    # The job's own charge (its page, the allocation's jobs table) is its records' total.
    charged = client.get(f"/api/v1/jobs/{job.pk}/").json()["gpu_seconds"]
    assert charged == sum(r.gpu_seconds for r in charges.filter(job_id=job.pk)) >= 120
    spend = sum(r.cost for r in charges)
    shown = client.get(f"/api/v1/allocations/{allocation.pk}/").json()
    assert spend > 0 and Decimal(shown["spend"]) == spend  # a decimal string, exact
    assert Decimal(shown["budget_remaining"]) == Decimal(50) - spend - Decimal(
        shown["cost_reserved"]
    )


def _events(job: Job) -> list[dict]:
    from allocations.models import Event

    return list(
        Event.objects.filter(object_id=job.pk, content_type__model="job")
        .order_by("pk")
        .values("to_state")
    )


def test_a_launch_over_the_budget_left_is_refused_with_the_numbers_and_launches_nothing(
    api, researcher, allocation, cluster
):
    now = clock.now()
    charge(  # 49.90 of the 50.00 budget already spent
        allocation=allocation,
        source="cloud",
        external_id="i-earlier:20260101T000000",
        period_start=now - dt.timedelta(hours=2),
        period_end=now,
        gpu_seconds=0,
        cpu_seconds=0,
        cost=Decimal("49.90"),
    )

    response = api.as_user(researcher).post(
        "/api/v1/jobs/",
        {"allocation": allocation.pk, "gpus": 1, "wall_time_minutes": 60, "params": PARAMS},
        format="json",
    )

    assert response.status_code == 409, response.json()
    body = response.json()
    assert body["estimate_cost"] == "0.3620"  # one hour of g5.xlarge spot, a decimal string
    assert body["remaining_budget"] == "0.1000"
    assert "budget" in body["detail"]
    assert not Job.objects.exists() and not CloudTask.objects.exists()
    assert not Node.objects.filter(cluster=cluster).exists()
    assert aws_client(cluster).find(cluster=str(cluster.pk)) == []

    # What is left still pays for a shorter run.
    response = api.as_user(researcher).post(
        "/api/v1/jobs/",
        {"allocation": allocation.pk, "gpus": 1, "wall_time_minutes": 15, "params": PARAMS},
        format="json",
    )
    assert response.status_code == 201, response.json()
    assert Decimal(response.json()["estimate_cost"]) == Decimal("0.0905")
