"""Keeping the cloud tidy and within budget: idle workers terminated, an idle cluster stopped (it
has no head node; one an older version launched is terminated), the reconciler terminating
instances nobody knows and marking those that vanished, and workers stopped once the budget is
spent."""

from __future__ import annotations

from decimal import Decimal

import pytest

from allocations.models import Allocation, UsageRecord
from allocations.transitions import InvalidTransition
from launcher.cloud import clock
from launcher.cloud.aws import LaunchRequest
from launcher.cloud.client import aws_client
from launcher.cloud.models import CloudTask, Cluster, Node
from launcher.cloud.services import cloud_reconcile, cluster_sync, task_launch
from launcher.cloud.workload import TINY, ctxray_argv, stage_synthetic_dataset
from tests.cloud.conftest import drive

pytestmark = pytest.mark.django_db(transaction=True)


def _launch(allocation, researcher, cluster, epochs=1, data=None) -> CloudTask:
    return task_launch(
        allocation=allocation,
        by=researcher,
        instance_type="g5.xlarge",
        argv=ctxray_argv({**TINY, "epochs": epochs}),
        data_prefix=data or f"{cluster.prefix}data/none/",
        hours=Decimal("1"),
    )


def _states(cluster):
    return {(n.role, n.state) for n in Node.objects.filter(cluster=cluster)}


def test_idle_workers_are_terminated_then_the_idle_cluster_is_stopped(
    allocation, cluster, researcher, emulator
):
    task = _launch(allocation, researcher, cluster, data=stage_synthetic_dataset(cluster=cluster))
    drive(cluster, lambda: CloudTask.objects.get(pk=task.pk).state == "succeeded")
    worker = CloudTask.objects.get(pk=task.pk).node
    cluster_sync(cluster_id=cluster.pk)
    assert Node.objects.get(pk=worker.pk).state == "running"  # idle, but not for 5 minutes yet
    assert Cluster.objects.get(pk=cluster.pk).state == "ready"  # a worker still runs
    clock.advance(cluster.worker_idle_seconds + 1)
    report = cluster_sync(cluster_id=cluster.pk)
    assert report.idle_terminated == 1 and Node.objects.get(pk=worker.pk).state == "terminated"
    live = {i.instance_id: i.state for i in aws_client(cluster).find(cluster=str(cluster.pk))}
    assert worker.instance_id not in live or live[worker.instance_id] != "running"
    cluster_sync(cluster_id=cluster.pk)
    assert Cluster.objects.get(pk=cluster.pk).state == "idle"
    clock.advance(cluster.idle_seconds + 1)
    assert cluster_sync(cluster_id=cluster.pk).stopped
    drive(cluster, lambda: Cluster.objects.get(pk=cluster.pk).state == "stopped", timeout=30)
    assert _states(cluster) == {("worker", "terminated")}  # no head was ever launched


@pytest.mark.parametrize("asleep", ["stopped", "idle"])
def test_a_new_task_wakes_a_sleeping_cluster_with_a_worker_only(
    allocation, cluster, researcher, asleep
):
    Cluster.objects.filter(pk=cluster.pk).update(state=asleep)
    task = _launch(allocation, researcher, cluster)
    assert Cluster.objects.get(pk=cluster.pk).state == "provisioning"
    cluster_sync(cluster_id=cluster.pk)
    assert Cluster.objects.get(pk=cluster.pk).state == "ready"
    assert _states(cluster) == {("worker", "running")}
    assert [i.instance_id for i in aws_client(cluster).find(cluster=str(cluster.pk))] == [
        Node.objects.get(pk=task.node_id).instance_id
    ]


def test_a_cluster_whose_worker_never_started_goes_idle(allocation, cluster, researcher):
    from launcher.cloud import faults

    everything = {
        ("g5.xlarge", None, "spot"): "InsufficientInstanceCapacity",
        ("g5.12xlarge", None, "spot"): "InsufficientInstanceCapacity",
    }
    with faults.capacity_errors(everything):
        task = _launch(allocation, researcher, cluster)
    assert CloudTask.objects.get(pk=task.pk).state == "failed"
    cluster_sync(cluster_id=cluster.pk)
    assert Cluster.objects.get(pk=cluster.pk).state == "idle"  # not provisioning forever


def test_the_sync_terminates_a_head_node_an_older_version_launched(
    allocation, cluster, researcher, dlami
):
    head = Node.objects.create(
        cluster=cluster, role="head", token="h-legacy", instance_type="t3.large", market="on-demand"
    )
    inst = aws_client(cluster).launch(
        LaunchRequest(
            token="h-legacy-0",
            instance_type="t3.large",
            market="on-demand",
            image_id=dlami,
            tags={"cluster": str(cluster.pk), "node": str(head.pk), "role": "head"},
        )
    )
    Node.objects.filter(pk=head.pk).update(
        instance_id=inst.instance_id,
        state="running",
        running_at=clock.now(),
        charged_until=clock.now(),
    )
    Cluster.objects.filter(pk=cluster.pk).update(state="idle", idle_since=clock.now())
    assert cluster_sync(cluster_id=cluster.pk).heads_retired == 1
    head.refresh_from_db()
    assert head.state == "terminated" and head.ended_at is not None
    assert not aws_client(cluster).find(cluster=str(cluster.pk))


def test_the_reconciler_terminates_unknown_tagged_instances_and_marks_vanished_ones(
    allocation, cluster, researcher, cloud_facility, dlami
):
    task = _launch(allocation, researcher, cluster)
    backend = aws_client(cluster)
    stray = backend.launch(
        LaunchRequest(
            token="stray-0000001",
            instance_type="g5.xlarge",
            market="spot",
            image_id=dlami,
            tags={"cluster": str(cluster.pk), "role": "worker"},
        )
    )
    worker = Node.objects.get(pk=task.node_id)
    backend.terminate([worker.instance_id])  # gone behind the portal's back
    report = cloud_reconcile(facility=cloud_facility)
    assert report.orphans_terminated == [stray.instance_id]
    assert report.nodes_lost == [worker.pk]
    assert not backend.find(managed="1")
    assert Node.objects.get(pk=worker.pk).state == "lost"
    # A lost worker is its task's business (the sync replaces it), not a reason to fail the
    # cluster: clusters have no head node whose loss would.
    assert Cluster.objects.get(pk=cluster.pk).state == "provisioning"
    assert cloud_reconcile(facility=cloud_facility).orphans_terminated == []


def test_workers_stop_when_the_budget_is_spent(allocation, cluster, researcher):
    task = _launch(allocation, researcher, cluster)
    cluster_sync(cluster_id=cluster.pk)  # the worker runs: billing starts
    clock.advance(113 * 3600)  # 113 GPU-h > the 100 granted (0.362 x 113 h = 40.91 of 50)
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
    allocation, cluster, researcher, cloud_facility
):
    from launcher.cloud.tasks import clusters_to_sync, sync_all

    task = _launch(allocation, researcher, cluster)
    cluster_sync(cluster_id=cluster.pk)  # the worker runs: billing starts
    worker = Node.objects.get(pk=task.node_id)
    backend = aws_client(cluster)
    # Failed by an older version (its head vanished); nothing fails a cluster now, but such a
    # row must still be wound down.
    Cluster.objects.filter(pk=cluster.pk).update(state="failed", state_reason="head node vanished")
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
    allocation, cluster, researcher, emulator
):
    data = stage_synthetic_dataset(cluster=cluster)
    first = _launch(allocation, researcher, cluster, data=data)
    drive(cluster, lambda: CloudTask.objects.get(pk=first.pk).state == "succeeded")
    worker = CloudTask.objects.get(pk=first.pk).node
    second = _launch(allocation, researcher, cluster, data=data)
    assert CloudTask.objects.get(pk=second.pk).node_id == worker.pk
    done = drive(
        cluster,
        lambda: (
            CloudTask.objects.get(pk=second.pk)
            if CloudTask.objects.get(pk=second.pk).state in CloudTask.FINAL
            else None
        ),
    )
    assert done.state == "succeeded", done.state_reason
    assert Node.objects.filter(cluster=cluster, role="worker").count() == 1
    status = aws_client(cluster).get_json(f"{done.prefix}status/{worker.instance_id}.json")
    assert status["state"] == "succeeded"  # the same instance ran it
