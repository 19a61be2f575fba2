"""The sync never misses how a task ended: a `succeeded` status is not frozen with stale
progress, a job that finished before the spot notice stopped it is succeeded (not resumed),
and a pass holding an old copy of a task another pass has finished leaves it alone.

The worker's reports are written to S3 here as the agent writes them (status, progress.json),
so each interleaving is exact rather than left to timing."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from launcher.cloud.client import aws_client
from launcher.cloud.models import CloudTask, Node
from launcher.cloud.services import cluster_sync, task_launch
from launcher.cloud.services.sync import Report, _sync_task
from launcher.cloud.workload import TINY, ctxray_argv

pytestmark = pytest.mark.django_db(transaction=True)


def _running_task(allocation, cluster, researcher) -> CloudTask:
    task = task_launch(
        allocation=allocation,
        by=researcher,
        instance_type="g5.xlarge",
        argv=ctxray_argv({**TINY, "epochs": 2}),
        data_prefix="x/",
        hours=Decimal("1"),
    )
    _report(cluster, task, "running", {"state": "running", "epoch": 1, "epochs": 2, "step": 2})
    cluster_sync(cluster_id=cluster.pk)
    task = CloudTask.objects.select_related("node").get(pk=task.pk)
    assert task.state == "running" and task.progress["epoch"] == 1
    return task


def _report(cluster, task, state: str, progress: dict | None = None) -> None:
    task = CloudTask.objects.select_related("node").get(pk=task.pk)
    backend = aws_client(cluster)
    if progress is not None:
        backend.put_json(f"{task.prefix}out/progress.json", progress)
    backend.put_json(
        f"{task.prefix}status/{task.node.instance_id}.json",
        {
            "state": state,
            "instance": task.node.instance_id,
            "resumed_files": 0,
            "at": dt.datetime.now(dt.UTC).isoformat(),
            "exit_code": 0 if state == "succeeded" else None,
        },
    )


def test_a_success_waits_for_its_final_progress_instead_of_freezing_a_stale_one(
    allocation, cluster, researcher
):
    task = _running_task(allocation, cluster, researcher)
    _report(cluster, task, "succeeded")  # the status, but S3 still serves the old progress
    cluster_sync(cluster_id=cluster.pk)
    assert CloudTask.objects.get(pk=task.pk).state == "running"
    aws_client(cluster).put_json(
        f"{task.prefix}out/progress.json",
        {"state": "succeeded", "epoch": 2, "epochs": 2, "step": 4},
    )
    cluster_sync(cluster_id=cluster.pk)
    done = CloudTask.objects.get(pk=task.pk)
    assert done.state == "succeeded" and done.progress["epoch"] == 2


def test_a_job_that_finished_before_the_notice_stopped_it_is_succeeded_not_resumed(
    allocation, cluster, researcher
):
    task = _running_task(allocation, cluster, researcher)
    backend = aws_client(cluster)
    backend.put_json(
        f"{cluster.prefix}instances/{task.node.instance_id}/spot/instance-action",
        {"action": "terminate"},
    )
    cluster_sync(cluster_id=cluster.pk)
    assert CloudTask.objects.get(pk=task.pk).state == "preempted"
    _report(cluster, task, "succeeded", {"state": "succeeded", "epoch": 2, "epochs": 2})
    cluster_sync(cluster_id=cluster.pk)
    done = CloudTask.objects.get(pk=task.pk)
    assert (done.state, done.attempt, done.node_id) == ("succeeded", 1, task.node_id)
    assert done.progress["epoch"] == 2
    assert Node.objects.filter(cluster=cluster, role="worker").count() == 1  # no replacement


def test_a_pass_holding_an_old_copy_of_a_finished_task_leaves_it_alone(
    allocation, cluster, researcher
):
    stale = _running_task(allocation, cluster, researcher)
    _report(cluster, stale, "succeeded", {"state": "succeeded", "epoch": 2, "epochs": 2})
    cluster_sync(cluster_id=cluster.pk)  # another pass finishes the task
    assert CloudTask.objects.get(pk=stale.pk).state == "succeeded"
    report = Report()
    _sync_task(aws_client(cluster), cluster, stale, report, None)  # read before that pass
    assert report.finished == 0
    assert CloudTask.objects.get(pk=stale.pk).state == "succeeded"
