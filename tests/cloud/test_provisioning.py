"""Provisioning against the moto server: a cluster per allocation with spot workers only (no
head node), every resource tagged, capacity errors falling back, budgets refusing, and a
launch that dies half-way never leaving a second instance behind."""

from __future__ import annotations

from decimal import Decimal

import pytest

from launcher.cloud import faults
from launcher.cloud.client import aws_client
from launcher.cloud.models import CloudTask, Cluster, Node
from launcher.cloud.services import BudgetExceeded, cluster_sync, node_launch, task_launch
from launcher.cloud.workload import TINY, ctxray_argv

pytestmark = pytest.mark.django_db(transaction=True)


def _launch(allocation, researcher, *, itype="g5.xlarge", hours="1", **kw):
    return task_launch(
        allocation=allocation,
        by=researcher,
        argv=ctxray_argv({**TINY, "epochs": 2}),
        data_prefix="x/",
        instance_type=itype,
        hours=Decimal(hours),
        **kw,
    )


def _instances(cluster):
    return {i.instance_id: i for i in aws_client(cluster).find(cluster=str(cluster.pk))}


def test_provisioning_activates_the_allocation_with_its_own_prefix(allocation, cluster):
    assert allocation.status == "active"
    assert cluster.prefix == f"{allocation.default_account_name()}/"
    keys = aws_client(cluster).list_keys(cluster.prefix)
    assert keys == [f"{cluster.prefix}.portal-account"]


def test_a_task_starts_one_tagged_spot_worker_and_no_head(allocation, cluster, researcher):
    task = _launch(allocation, researcher)
    task.refresh_from_db()
    assert task.state == CloudTask.State.LAUNCHING
    worker = Node.objects.get(pk=task.node_id)
    assert [n.role for n in cluster.nodes.all()] == ["worker"]
    # Everything the portal's tags find in the cloud: this cluster's, then all it manages
    # (the facility's old `head_instance_type` setting launches nothing).
    live = _instances(cluster)
    assert list(live) == [worker.instance_id]
    managed = aws_client(cluster).find(managed="1")
    assert [(i.tags["portal:role"], i.market) for i in managed] == [("worker", "spot")]
    assert not aws_client(cluster).find(role="head")
    inst = live[worker.instance_id]
    assert (inst.market, inst.instance_type) == ("spot", "g5.xlarge")
    assert inst.tags["portal:allocation"] == str(allocation.pk)
    assert inst.tags["portal:cluster"] == str(cluster.pk)
    assert inst.tags["portal:node"] == str(worker.pk)
    assert worker.price_per_hour == Decimal("0.362")  # the catalogue, not moto's 0.00001
    assert "PORTAL_NODE_CONFIG" in aws_client(cluster).user_data(worker.instance_id)
    # The task woke the cluster: provisioning until its worker runs, then ready.
    assert Cluster.objects.get(pk=cluster.pk).state == "provisioning"
    cluster_sync(cluster_id=cluster.pk)
    assert Node.objects.get(pk=worker.pk).state == "running"
    assert Cluster.objects.get(pk=cluster.pk).state == "ready"


def test_capacity_errors_fall_back_to_another_zone_then_another_type(
    allocation, cluster, researcher
):
    refuse = {("g5.xlarge", None, "spot"): "InsufficientInstanceCapacity"}
    with faults.capacity_errors(refuse) as refused:
        task = _launch(allocation, researcher)
    worker = Node.objects.get(pk=task.node_id)
    assert [r["zone"] for r in refused] == ["us-east-1a", "us-east-1b"]
    assert (worker.instance_type, worker.market, worker.state) == ("g5.12xlarge", "spot", "pending")
    assert [a["code"] for a in worker.attempts] == ["InsufficientInstanceCapacity"] * 2
    assert worker.price_per_hour == Decimal("2.105")


def test_on_demand_is_the_last_resort_only_when_the_user_allowed_it(
    allocation, cluster, researcher
):
    everything = {
        ("g5.xlarge", None, "spot"): "SpotMaxPriceTooLow",
        ("g5.12xlarge", None, "spot"): "InsufficientInstanceCapacity",
    }
    with faults.capacity_errors(everything):
        refused_task = _launch(allocation, researcher)
    refused_task.refresh_from_db()
    assert refused_task.state == CloudTask.State.FAILED
    assert "No capacity" in refused_task.state_reason
    cluster.allow_on_demand = True
    cluster.save()
    with faults.capacity_errors(everything):
        task = _launch(allocation, researcher)
    worker = Node.objects.get(pk=task.node_id)
    assert (worker.instance_type, worker.market) == ("g5.xlarge", "on-demand")
    assert worker.price_per_hour == Decimal("1.006")


def test_a_launch_over_the_remaining_budget_is_refused_before_any_instance(
    allocation, cluster, researcher
):
    # 200 h x 0.362 = 72.4 > the 50 budget
    with pytest.raises(BudgetExceeded):
        _launch(allocation, researcher, hours="200")
    assert not _instances(cluster) and not CloudTask.objects.exists()


class WorkerKilled(BaseException):
    """The Celery worker process dying right after RunInstances answered."""


def test_a_worker_killed_mid_provision_leaves_no_duplicate_instance(
    allocation, cluster, researcher, monkeypatch
):
    from launcher.cloud.services import clusters

    def die(node, instance, *, refusals, image_source=""):
        raise WorkerKilled

    monkeypatch.setattr(clusters, "_record_launch", die)
    with pytest.raises(WorkerKilled):
        _launch(allocation, researcher)  # the worker's launch dies after RunInstances
    monkeypatch.undo()
    assert len(_instances(cluster)) == 1
    task = CloudTask.objects.get()
    worker = Node.objects.get(pk=task.node_id)
    assert worker.state == "requested" and worker.instance_id == ""
    from launcher.cloud.tasks import start_task

    start_task.delay(task.pk)  # the retry after the restart adopts the instance
    live = _instances(cluster)
    worker.refresh_from_db()
    assert list(live) == [worker.instance_id] and worker.state == "pending"
    node_launch(node_id=task.node_id)  # and once more: still no duplicate
    assert list(_instances(cluster)) == [worker.instance_id]


def test_others_cannot_launch_on_the_allocation(allocation, outsider):
    from allocations.models import Allocation

    with pytest.raises(Allocation.DoesNotExist):
        _launch(allocation, outsider)
