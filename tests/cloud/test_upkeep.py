"""Keeping the cloud tidy and within budget: idle workers terminated, an idle head stopped, the
reconciler terminating instances nobody knows and marking those that vanished, and workers
stopped once the budget is spent."""
from __future__ import annotations

from decimal import Decimal

import pytest

from allocations.models import Allocation, UsageRecord
from allocations.transitions import InvalidTransition
from launcher.backends.aws import LaunchRequest
from launcher.cloud import clock
from launcher.cloud.client import aws_client
from launcher.cloud.models import CloudTask, Cluster, Node
from launcher.cloud.services import cloud_reconcile, cluster_sync, task_launch
from launcher.cloud.workload import TINY, ctxray_argv, stage_synthetic_dataset
from tests.cloud.conftest import drive

pytestmark = pytest.mark.django_db(transaction=True)


def _launch(allocation, researcher, cluster, epochs=1, data=None) -> CloudTask:
    return task_launch(allocation=allocation, by=researcher, instance_type="g5.xlarge",
                       argv=ctxray_argv({**TINY, "epochs": epochs}),
                       data_prefix=data or f"{cluster.prefix}data/none/", hours=Decimal("1"))


def _states(cluster):
    return {(n.role, n.state) for n in Node.objects.filter(cluster=cluster)}


def test_idle_workers_are_terminated_then_the_idle_head_is_stopped(allocation, cluster, researcher,
                                                                    emulator):
    task = _launch(allocation, researcher, cluster, data=stage_synthetic_dataset(cluster=cluster))
    drive(cluster, lambda: CloudTask.objects.get(pk=task.pk).state == "succeeded")
    worker = CloudTask.objects.get(pk=task.pk).node
    cluster_sync(cluster_id=cluster.pk)
    assert Node.objects.get(pk=worker.pk).state == "running"  # idle, but not for 5 minutes yet
    clock.advance(cluster.worker_idle_seconds + 1)
    report = cluster_sync(cluster_id=cluster.pk)
    assert report.idle_terminated == 1 and Node.objects.get(pk=worker.pk).state == "terminated"
    live = {i.instance_id: i.state for i in aws_client(cluster).find(cluster=str(cluster.pk))}
    assert worker.instance_id not in live or live[worker.instance_id] != "running"
    cluster_sync(cluster_id=cluster.pk)
    assert Cluster.objects.get(pk=cluster.pk).state == "idle"
    clock.advance(cluster.head_idle_seconds + 1)
    assert cluster_sync(cluster_id=cluster.pk).head_stopped
    drive(cluster, lambda: Cluster.objects.get(pk=cluster.pk).state == "stopped", timeout=30)
    assert ("head", "stopped") in _states(cluster)


def test_a_new_task_starts_a_stopped_head_again(allocation, cluster, researcher):
    _launch(allocation, researcher, cluster)
    head = cluster.nodes.get(role="head")
    aws_client(cluster).stop([head.instance_id])
    cluster_sync(cluster_id=cluster.pk)
    assert Node.objects.get(pk=head.pk).state == "stopped"
    _launch(allocation, researcher, cluster)
    assert Node.objects.get(pk=head.pk).state == "pending"


def test_the_reconciler_terminates_unknown_tagged_instances_and_marks_vanished_ones(
        allocation, cluster, researcher, cloud_facility, dlami):
    _launch(allocation, researcher, cluster)
    backend = aws_client(cluster)
    stray = backend.launch(LaunchRequest(token="stray-0000001", instance_type="g5.xlarge",
                                         market="spot", image_id=dlami,
                                         tags={"cluster": str(cluster.pk), "role": "worker"}))
    head = cluster.nodes.get(role="head")
    backend.terminate([head.instance_id])  # gone behind the portal's back
    report = cloud_reconcile(facility=cloud_facility)
    assert report.orphans_terminated == [stray.instance_id]
    assert report.nodes_lost == [head.pk] and report.clusters_failed == [cluster.pk]
    live = {i.instance_id for i in backend.find(managed="1")}
    worker = cluster.nodes.get(role="worker")
    assert live == {worker.instance_id}
    assert Cluster.objects.get(pk=cluster.pk).state == "failed"
    assert cloud_reconcile(facility=cloud_facility).orphans_terminated == []


def test_workers_stop_when_the_budget_is_spent(allocation, cluster, researcher):
    task = _launch(allocation, researcher, cluster)
    cluster_sync(cluster_id=cluster.pk)  # both nodes running: billing starts
    clock.advance(113 * 3600)  # (0.362 + 0.0832) x 113 h > the 50 budget
    report = cluster_sync(cluster_id=cluster.pk)
    assert report.budget_stop
    assert CloudTask.objects.get(pk=task.pk).state == "cancelled"
    worker = Node.objects.get(pk=task.node_id)
    assert worker.state == "terminated"
    exhausted = Allocation.objects.get(pk=allocation.pk)
    assert exhausted.status == "exhausted"  # 113 GPU-h > 100
    with pytest.raises(InvalidTransition):  # exhausted: no launch
        _launch(exhausted, researcher, cluster)


def test_a_failed_cluster_is_synced_until_its_workers_are_terminated_and_charged(
        allocation, cluster, researcher, cloud_facility):
    from launcher.cloud.tasks import clusters_to_sync, sync_all

    task = _launch(allocation, researcher, cluster)
    cluster_sync(cluster_id=cluster.pk)  # head and worker running: billing starts
    worker = Node.objects.get(pk=task.node_id)
    backend = aws_client(cluster)
    backend.terminate([cluster.nodes.get(role="head").instance_id])  # the head vanishes
    assert cloud_reconcile(facility=cloud_facility).clusters_failed == [cluster.pk]
    assert worker.instance_id in {i.instance_id for i in backend.find(managed="1")}
    assert list(clusters_to_sync()) == [Cluster.objects.get(pk=cluster.pk)]
    clock.advance(600)  # ten minutes of the worker running on after the failure
    sync_all()
    worker.refresh_from_db()
    assert worker.state == "terminated" and worker.ended_at is not None
    assert worker.instance_id not in {i.instance_id for i in backend.find(managed="1")}
    assert worker.charged_until == worker.ended_at
    charged = UsageRecord.objects.filter(allocation=allocation, detail__node=worker.pk)
    assert sum(r.gpu_seconds for r in charged) >= 600
    assert CloudTask.objects.get(pk=task.pk).state == "failed"
    assert not clusters_to_sync().exists()  # nothing of it runs or bills any more


def test_a_warm_worker_takes_the_next_task_of_its_allocation_before_idle_stop(
        allocation, cluster, researcher, emulator):
    data = stage_synthetic_dataset(cluster=cluster)
    first = _launch(allocation, researcher, cluster, data=data)
    drive(cluster, lambda: CloudTask.objects.get(pk=first.pk).state == "succeeded")
    worker = CloudTask.objects.get(pk=first.pk).node
    second = _launch(allocation, researcher, cluster, data=data)
    assert CloudTask.objects.get(pk=second.pk).node_id == worker.pk
    done = drive(cluster, lambda: CloudTask.objects.get(pk=second.pk)
                 if CloudTask.objects.get(pk=second.pk).state in CloudTask.FINAL else None)
    assert done.state == "succeeded", done.state_reason
    assert Node.objects.filter(cluster=cluster, role="worker").count() == 1
    status = aws_client(cluster).get_json(f"{done.prefix}status/{worker.instance_id}.json")
    assert status["state"] == "succeeded"  # the same instance ran it
