"""The cloud agent enforces a task's wall time: the assignment carries the run time the attempt
may use (the job's wall time less what earlier, interrupted attempts ran), and the agent stops
the job there (SIGTERM, then SIGKILL) and reports it failed with the reason, which the portal's
sync records. Against moto's S3 and the emulator's metadata endpoint, as the other agent tests."""

from __future__ import annotations

import json
import sys
import threading
from decimal import Decimal
from http.server import ThreadingHTTPServer

import boto3
import pytest

from launcher.cloud import clock
from launcher.cloud.agent import NodeAgent
from launcher.cloud.client import aws_client
from launcher.cloud.emulator import Metadata, _handler
from launcher.cloud.imds import Imds
from launcher.cloud.models import CloudTask, Node
from launcher.cloud.services import cluster_sync, task_launch
from launcher.cloud.services.tasks import task_interrupted, worker_spec
from launcher.cloud.userdata import NodeConfig
from launcher.cloud.workload import TINY, ctxray_argv

INSTANCE = {
    "InstanceId": "i-0dead",
    "InstanceType": "g5.xlarge",
    "ImageId": "ami-1",
    "Placement": {"AvailabilityZone": "us-east-1a"},
    "InstanceLifecycle": "spot",
}
# A job that would run a minute: it checkpoints and exits 75 on SIGTERM, as the trainer does.
POLITE = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, lambda *a: sys.exit(75))\n"
    "time.sleep(60)\n"
)
# A job that ignores SIGTERM: only SIGKILL stops it.
DEAF = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(60)\n"


@pytest.fixture
def imds(tmp_path):
    notices = tmp_path / "imds"
    notices.mkdir()
    meta = Metadata(
        instance=INSTANCE,
        user_data="#!/bin/bash\n",
        role="portal-role",
        region="us-east-1",
        notices=notices,
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(meta))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield Imds(f"http://127.0.0.1:{server.server_address[1]}")
    server.shutdown()
    server.server_close()


def _agent_runs(
    tmp_path, imds, moto_endpoint, *, script: str, deadline: float | None, extra: dict | None = None
) -> dict:
    s3 = boto3.client("s3", region_name="us-east-1", endpoint_url=moto_endpoint)
    s3.create_bucket(Bucket="portal-test-deadline")
    config = NodeConfig(
        bucket="portal-test-deadline",
        region="us-east-1",
        prefix="acct/",
        cluster=1,
        node=2,
        node_token="w-1",
        role="worker",
        bundle_key="acct/bundles/x.tar.gz",
        bundle_sha256="0" * 64,
    )
    s3.put_object(
        Bucket=config.bucket,
        Key=config.assignment_key,
        Body=json.dumps(
            {
                "bucket": config.bucket,
                "task_prefix": "acct/tasks/t/",
                "data_prefix": "acct/data/",
                "argv": [sys.executable, "-c", script],
                "deadline_seconds": deadline,
                "kill_after_seconds": 1.0,
                **(extra or {}),
            }
        ).encode(),
    )
    agent = NodeAgent(config=config, workdir=tmp_path / "work", s3=s3, imds=imds, poll=0.1)
    assert agent.step() is True  # runs the task to its end
    return json.loads(
        s3.get_object(Bucket=config.bucket, Key="acct/tasks/t/status/i-0dead.json")["Body"].read()
    )


def test_the_agent_stops_a_job_at_its_wall_time_and_says_why(tmp_path, imds, moto_endpoint):
    status = _agent_runs(tmp_path, imds, moto_endpoint, script=POLITE, deadline=1.0)
    assert status["state"] == "failed" and status["deadline"] is True
    assert status["exit_code"] == 75  # it got SIGTERM and checkpointed, not a kill
    assert status["error"] == "Stopped at its wall time (1 s of run time)."


def test_a_job_that_ignores_sigterm_is_killed(tmp_path, imds, moto_endpoint):
    status = _agent_runs(tmp_path, imds, moto_endpoint, script=DEAF, deadline=1.0)
    assert status["state"] == "failed" and status["deadline"] is True
    assert status["exit_code"] == -9  # SIGKILL, kill_after_seconds after the SIGTERM


def test_without_a_deadline_the_job_runs_to_its_end(tmp_path, imds, moto_endpoint):
    status = _agent_runs(tmp_path, imds, moto_endpoint, script="pass", deadline=None)
    assert status["state"] == "succeeded" and "deadline" not in status


def test_an_assignment_field_the_agent_does_not_know_is_ignored(tmp_path, imds, moto_endpoint):
    """A newer portal's assignment reaches a warm worker on an older bundle: it still runs."""
    status = _agent_runs(
        tmp_path,
        imds,
        moto_endpoint,
        script="pass",
        deadline=None,
        extra={"from_a_newer_portal": True},
    )
    assert status["state"] == "succeeded"


@pytest.mark.django_db(transaction=True)
def test_the_assignment_carries_the_wall_time_left_to_the_attempt(allocation, cluster, researcher):
    task = task_launch(
        allocation=allocation,
        by=researcher,
        instance_type="g5.xlarge",
        argv=ctxray_argv({**TINY, "epochs": 1}),
        data_prefix="x/",
        hours=Decimal("0.5"),
    )
    task.refresh_from_db()
    assert task.wall_seconds == 1800
    assert worker_spec(task).deadline_seconds == 1800
    cluster_sync(cluster_id=cluster.pk)  # the worker runs (moto: at once)
    task = CloudTask.objects.select_related("cluster", "node").get(pk=task.pk)
    worker = Node.objects.get(pk=task.node_id)
    clock.advance(10 * 60)
    task_interrupted(task=task, node=worker, source="notice", notice_at=clock.now())
    Node.objects.filter(pk=worker.pk).update(ended_at=clock.now())
    # The replacement's attempt may use what is left: 30 min less the 10 the first one ran.
    left = worker_spec(CloudTask.objects.select_related("cluster").get(pk=task.pk)).deadline_seconds
    assert left == pytest.approx(1200, abs=2)


@pytest.mark.django_db(transaction=True)
def test_the_sync_records_the_agents_reason(allocation, cluster, researcher):
    task = task_launch(
        allocation=allocation,
        by=researcher,
        instance_type="g5.xlarge",
        argv=ctxray_argv({**TINY, "epochs": 1}),
        data_prefix="x/",
        hours=Decimal("0.5"),
    )
    cluster_sync(cluster_id=cluster.pk)
    task = CloudTask.objects.select_related("cluster", "node").get(pk=task.pk)
    aws_client(cluster).put_json(
        f"{task.prefix}status/{task.node.instance_id}.json",
        {
            "state": "failed",
            "exit_code": 75,
            "deadline": True,
            "error": "Stopped at its wall time (1800 s of run time).",
        },
    )
    cluster_sync(cluster_id=cluster.pk)
    task.refresh_from_db()
    assert task.state == "failed"
    assert task.state_reason == "Stopped at its wall time (1800 s of run time)."
