"""The portal's own detection, the fallback for a notice the agent never reported: spot request
status codes (injected: moto keeps no spot requests for RunInstances launches) and the
instance's state."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from launcher.cloud import faults
from launcher.cloud.client import aws_client
from launcher.cloud.models import CloudTask, Interruption
from launcher.cloud.services import cluster_sync, task_launch
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
    task = CloudTask.objects.select_related("node").get(pk=task.pk)
    backend = aws_client(cluster)
    backend.put_json(f"{task.prefix}out/progress.json", {"state": "running", "epoch": 1})
    backend.put_json(
        f"{task.prefix}status/{task.node.instance_id}.json",
        {
            "state": "running",
            "instance": task.node.instance_id,
            "at": dt.datetime.now(dt.UTC).isoformat(),
        },
    )
    cluster_sync(cluster_id=cluster.pk)
    assert CloudTask.objects.get(pk=task.pk).state == "running"
    return task


@pytest.mark.parametrize(
    "code",
    [
        "marked-for-termination",
        "instance-terminated-by-price",
        "instance-terminated-no-capacity",
        "marked-for-stop",
    ],
)
def test_a_reclaiming_spot_request_status_preempts_the_task(allocation, cluster, researcher, code):
    task = _running_task(allocation, cluster, researcher)
    with faults.spot_request_status({task.node.instance_id: code}):
        cluster_sync(cluster_id=cluster.pk)
    assert CloudTask.objects.get(pk=task.pk).state == "preempted"
    interruption = Interruption.objects.get(node=task.node)
    assert interruption.source == "spot-request" and interruption.notice_at is None


@pytest.mark.parametrize("code", ["fulfilled", "capacity-not-available", "pending-fulfillment"])
def test_other_spot_request_statuses_leave_the_task_running(allocation, cluster, researcher, code):
    task = _running_task(allocation, cluster, researcher)
    with faults.spot_request_status({task.node.instance_id: code}):
        cluster_sync(cluster_id=cluster.pk)
    assert CloudTask.objects.get(pk=task.pk).state == "running"
    assert not Interruption.objects.filter(node=task.node).exists()


def test_a_spot_worker_terminated_without_any_notice_is_an_interruption(
    allocation, cluster, researcher
):
    task = _running_task(allocation, cluster, researcher)
    aws_client(cluster).terminate([task.node.instance_id])
    cluster_sync(cluster_id=cluster.pk)
    assert CloudTask.objects.get(pk=task.pk).state in ("preempted", "launching")
    assert Interruption.objects.get(node=task.node).source == "instance-state"


def test_a_rebalance_recommendation_reported_by_the_agent_preempts_the_task(
    allocation, cluster, researcher
):
    task = _running_task(allocation, cluster, researcher)
    aws_client(cluster).put_json(
        f"{cluster.prefix}instances/{task.node.instance_id}/events/rebalance",
        {"noticeTime": "2026-11-23T12:00:00Z", "kind": "events/rebalance"},
    )
    cluster_sync(cluster_id=cluster.pk)
    assert CloudTask.objects.get(pk=task.pk).state == "preempted"
    assert Interruption.objects.get(node=task.node).source == "rebalance"


def test_each_injected_hook_gets_a_client_of_its_own(cluster):
    """Clients are cached per hook set. Keyed by id(), a hook removed and freed could hand its
    address, and so its cached client, to the next one: the next test's injected spot codes
    were then never seen (a flaky failure in the full suite)."""
    from launcher.cloud import aws

    hooked = []
    for n in range(6):

        def hook(client, n=n):
            hooked.append((n, client.meta.service_model.service_name))

        aws.CLIENT_HOOKS.append(hook)
        try:
            aws_client(cluster)
        finally:
            aws.CLIENT_HOOKS.remove(hook)
        del hook
    assert sorted({n for n, service in hooked if service == "ec2"}) == list(range(6))
