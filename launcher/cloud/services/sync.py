"""Bring one cluster's rows in line with the cloud (the 5-second beat): node states, task
progress and results, spot interruptions and their replacements, charges, idle stops.

Each pass first reads everything it needs from AWS and S3, then writes in short transactions,
then makes the calls those writes decided (terminate, stop). Every step is idempotent, so a pass
that dies half-way is finished by the next one.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from allocations.transitions import InvalidTransition
from launcher.cloud.aws import AwsClient, Instance

from .. import clock
from ..client import aws_client
from ..models import CloudTask, Cluster, Interruption, Node
from ..selectors import ACTIVE_TASK_STATES
from ..states import NODE_MOVES, move
from .clusters import nodes_terminate
from .costs import cluster_charge, node_charge
from .tasks import (
    cluster_stop_workers,
    task_finish,
    task_interrupted,
    task_replace_worker,
    task_running,
)

log = logging.getLogger(__name__)
T, N, C = CloudTask.State, Node.State, Cluster.State
EC2_TO_NODE = {
    "pending": N.PENDING,
    "running": N.RUNNING,
    "stopping": N.STOPPING,
    "stopped": N.STOPPED,
    "shutting-down": N.TERMINATED,
    "terminated": N.TERMINATED,
}
FINAL_WORKER_STATES = ("succeeded", "failed", "preempted", "killed")
# How long (real seconds) a `succeeded` status may wait for its final progress.json in S3.
FINAL_GRACE = 30.0
# Spot request status codes meaning AWS is taking (or took) the instance back. Codes before
# fulfilment (capacity-not-available, price-too-low, pending-*) and `fulfilled` are not: a
# RunInstances spot launch that finds no capacity fails at once (CapacityError, fallback).
# https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/spot-request-status.html
SPOT_RECLAIM_CODES = (
    "marked-for-termination",
    "marked-for-stop",
    "instance-terminated-by-price",
    "instance-terminated-no-capacity",
    "instance-terminated-capacity-oversubscribed",
    "instance-terminated-launch-group-constraint",
    "instance-stopped-by-price",
    "instance-stopped-no-capacity",
    "instance-stopped-capacity-oversubscribed",
)


@dataclass
class Seen:
    """What the cloud says about a task's current worker."""

    status: dict | None = None
    progress: dict | None = None
    notice: dict | None = None  # what the agent reported from the metadata service
    notice_source: str = Interruption.Source.NOTICE
    checkpoint: dict | None = None


@dataclass
class Report:
    interruptions: int = 0
    replaced: int = 0
    finished: int = 0
    idle_terminated: int = 0
    stopped: bool = False  # the cluster went idle -> stopping this pass
    heads_retired: int = 0
    budget_stop: bool = False
    notes: list[str] = field(default_factory=list)


def cluster_sync(*, cluster_id: int) -> Report:
    """One reconciliation pass over the cluster. Safe to run concurrently with launches."""
    report = Report()
    cluster = Cluster.objects.select_related("facility", "allocation").get(pk=cluster_id)
    backend = aws_client(cluster)
    live = list(cluster.nodes.exclude(state__in=Node.GONE).exclude(instance_id=""))
    instances = backend.describe([n.instance_id for n in live])
    spot = backend.spot_request_states([n.instance_id for n in live if n.market == "spot"])
    for node in live:
        _apply_instance(node, instances.get(node.instance_id))
    if cluster.state == C.FAILED:
        _wind_down(cluster, report)
        return report
    _retire_heads(cluster, report)
    for task in cluster.tasks.filter(state__in=ACTIVE_TASK_STATES).select_related("node"):
        iid = task.node.instance_id if task.node else ""
        taken = _taken_back(instances, spot, iid) if iid in instances or iid in spot else None
        _sync_task(backend, cluster, task, report, taken)
    if cluster_charge(cluster=cluster):
        report.budget_stop = True
        cluster_stop_workers(
            cluster_id=cluster.pk, reason="The allocation's budget or grant is spent."
        )
    _idle_workers(cluster, report)
    _cluster_state(cluster, report)
    return report


def _wind_down(cluster: Cluster, report: Report) -> None:
    """A failed cluster (one an older version failed when its head vanished) runs nothing
    more: its tasks fail, every live node is terminated, and its instance time is charged up to
    the termination. Synced until nothing of it runs or bills (tasks.sync_all selects it until
    then)."""
    reason = f"The cluster failed: {cluster.state_reason or 'see its events'}."
    for task in cluster.tasks.filter(state__in=ACTIVE_TASK_STATES):
        with transaction.atomic():
            task_finish(task=task, to=T.FAILED, reason=reason)
        report.finished += 1
    live = list(cluster.nodes.exclude(state__in=Node.GONE).exclude(instance_id=""))
    if live:
        nodes_terminate(cluster=cluster, nodes=live, reason=reason)
        report.notes.append(f"terminated {len(live)} node(s) of a failed cluster")
    # never launched (no instance): nothing runs or bills, just close the rows
    with transaction.atomic():
        for node in cluster.nodes.filter(state=N.REQUESTED, instance_id=""):
            move(node, to=N.FAILED, comment=reason, state_reason=reason[:300], ended_at=clock.now())
    cluster_charge(cluster=cluster)


def _apply_instance(node: Node, inst: Instance | None) -> None:
    now = clock.now()
    with transaction.atomic():
        node = Node.objects.select_for_update().get(pk=node.pk)
        if node.state in Node.GONE:
            return
        if inst is None:
            move(
                node,
                to=N.LOST,
                ended_at=now,
                comment="The cloud no longer knows this instance.",
                state_reason="vanished",
            )
            return
        to = EC2_TO_NODE.get(inst.state, node.state)
        if to == N.TERMINATED and Interruption.objects.filter(node=node).exists():
            to = N.INTERRUPTED
        elif to == N.TERMINATED and _runs_task(node) and node.market == "spot":
            return  # an interruption: the task sync records it, then ends the node
        if to == node.state or to not in NODE_MOVES.get(node.state, ()):
            return
        updates: dict = {}
        if to == N.RUNNING:
            updates = {"running_at": now, "charged_until": now}
        elif to in (N.TERMINATED, N.INTERRUPTED):
            updates = {"ended_at": now}
        if to == N.STOPPED:
            _charge_before_stop(node)
        move(node, to=to, comment=f"EC2 says {inst.state}.", **updates)


def _charge_before_stop(node: Node) -> None:
    transaction.on_commit(lambda: node_charge(node_id=node.pk))


def _runs_task(node: Node) -> bool:
    return CloudTask.objects.filter(
        node=node, state__in=(T.LAUNCHING, T.RUNNING, T.PREEMPTED)
    ).exists()


def _observe(backend: AwsClient, cluster: Cluster, task: CloudTask) -> Seen:
    """Read what the worker reported. The status is read first and the outputs after it: the
    agent uploads the outputs before it writes a final status, so a final status read here is
    never paired with progress older than the run's end."""
    iid = task.node.instance_id if task.node else ""
    if not iid:
        return Seen()
    seen = Seen(
        status=backend.get_json(f"{task.prefix}status/{iid}.json"),
        progress=backend.get_json(f"{task.prefix}out/progress.json"),
        notice=backend.get_json(f"{cluster.prefix}instances/{iid}/spot/instance-action"),
        checkpoint=backend.get_json(f"{task.prefix}checkpoint-meta.json"),
    )
    if seen.notice is None:
        seen.notice = backend.get_json(f"{cluster.prefix}instances/{iid}/events/rebalance")
        seen.notice_source = Interruption.Source.REBALANCE
    return seen


def _taken_back(instances: dict[str, Instance], spot: dict[str, str], iid: str) -> str | None:
    """How we know the cloud took a spot worker back, or None if it did not."""
    if spot.get(iid) in SPOT_RECLAIM_CODES:
        return Interruption.Source.SPOT_REQUEST
    inst = instances.get(iid)
    if (
        inst is not None
        and inst.market == "spot"
        and inst.state in ("shutting-down", "terminated", "stopping", "stopped")
    ):
        return Interruption.Source.INSTANCE_STATE
    return None


def _sync_task(
    backend: AwsClient, cluster: Cluster, task: CloudTask, report: Report, taken: str | None
) -> None:
    """Apply one task's observation. The network reads come first; then the row is read again,
    because the reads take time and another pass (the beat beside a manual sync) may have
    moved the task meanwhile: a stale row would make a compare-and-swap fail or, worse, an
    observation of the old worker be applied to its replacement."""
    seen = _observe(backend, cluster, task)
    observed_node = task.node_id
    try:
        _apply_task(cluster, task.pk, observed_node, seen, report, taken)
    except InvalidTransition as exc:  # TransitionConflict included: the next pass sees it
        log.info("task %s moved under the sync (%s); next pass", task.pk, exc)


def _apply_task(
    cluster: Cluster,
    task_id: int,
    observed_node: int | None,
    seen: Seen,
    report: Report,
    taken: str | None,
) -> None:
    task = CloudTask.objects.select_related("node").get(pk=task_id)
    if task.state in CloudTask.FINAL or task.node_id != observed_node:
        return  # finished or moved on to another worker since we looked
    node = task.node
    status = seen.status or {}
    state = status.get("state")
    if state == "succeeded":
        # Whatever the task's state (a job may finish before a spot notice stops it: the
        # worker succeeded, nothing needs resuming), a worker that succeeded ends the task.
        _finish_succeeded(task, seen, report)
        return
    if task.state == T.PREEMPTED:
        _maybe_replace(cluster, task, node, seen, report)
        return
    if node is None or not node.instance_id:
        return
    progress = seen.progress or task.progress
    if state == "failed":
        with transaction.atomic():
            task_finish(
                task=task,
                to=T.FAILED,
                progress=progress,
                exit_code=status.get("exit_code"),
                reason=str(status.get("error") or "")[:300]
                or f"Exit status {status.get('exit_code')}.",
            )
        report.finished += 1
    elif seen.notice or state in ("preempted", "killed") or taken or node.state in Node.GONE:
        source = seen.notice_source if seen.notice else taken or Interruption.Source.INSTANCE_STATE
        task_interrupted(
            task=task, node=node, source=source, notice_at=clock.now() if seen.notice else None
        )
        report.interruptions += 1
    elif state == "running":
        task_running(task=task, progress=progress)


def _finish_succeeded(task: CloudTask, seen: Seen, report: Report) -> None:
    """End the task as succeeded with its final progress. The trainer's last progress.json says
    `succeeded`; should S3 not show it yet (a read that raced the upload), keep the task
    running one more pass rather than freeze the stale progress into a finished task, unless
    the status is older than FINAL_GRACE (a workload that writes no progress)."""
    progress = seen.progress or {}
    final = progress.get("state") == "succeeded"
    if not final and not _older_than(seen.status, FINAL_GRACE):
        if progress and task.state == T.RUNNING:
            task_running(task=task, progress=progress)
        report.notes.append(f"task {task.pk}: succeeded, waiting for its final progress")
        return
    with transaction.atomic():
        task_finish(
            task=task,
            to=T.SUCCEEDED,
            reason="Finished.",
            exit_code=0,
            progress=progress or task.progress,
        )
    report.finished += 1


def _older_than(status: dict | None, seconds: float) -> bool:

    try:
        at = dt.datetime.fromisoformat((status or {})["at"])
    except (KeyError, TypeError, ValueError):
        return True
    return (timezone.now() - at).total_seconds() > seconds


def _maybe_replace(
    cluster: Cluster, task: CloudTask, node: Node | None, seen: Seen, report: Report
) -> None:
    """Replace the worker once its job has checkpointed (final status) or it is gone, so the
    replacement never reads a checkpoint the old worker is still writing."""
    if node is None or node.state == N.REQUESTED:
        return
    worker_done = (seen.status or {}).get("state") in FINAL_WORKER_STATES
    gone = node.state in Node.GONE or node.instance_id == "" or _instance_gone(cluster, node)
    if not (worker_done or gone):
        return
    nodes_terminate(cluster=cluster, nodes=[node], reason="Spot interruption.", to=N.INTERRUPTED)
    task_replace_worker(task=task, checkpoint=seen.checkpoint)
    report.replaced += 1


def _instance_gone(cluster: Cluster, node: Node) -> bool:
    inst = aws_client(cluster).describe([node.instance_id]).get(node.instance_id)
    return inst is None or inst.state in ("shutting-down", "terminated")


def _idle_workers(cluster: Cluster, report: Report) -> None:
    """Terminate workers that have run no task for the cluster's idle time."""
    now = clock.now()
    busy = CloudTask.objects.filter(cluster=cluster, state__in=ACTIVE_TASK_STATES).values("node")
    idle = cluster.nodes.filter(role=Node.Role.WORKER, state=N.RUNNING).exclude(pk__in=busy)
    Node.objects.filter(pk__in=idle.values("pk"), idle_since=None).update(idle_since=now)
    limit = now - dt.timedelta(seconds=cluster.worker_idle_seconds)
    expired = list(idle.filter(idle_since__lte=limit))
    if expired:
        report.idle_terminated = nodes_terminate(
            cluster=cluster,
            nodes=expired,
            reason=f"Idle for {cluster.worker_idle_seconds} s with no task.",
        )


def _retire_heads(cluster: Cluster, report: Report) -> None:
    """Terminate the head node an older version launched (an on-demand instance that did no
    work, billed until its idle stop): clusters have workers only now. Its stopped time (disk
    only, not in the catalogue) is not charged: charged_until moves to its end."""
    heads = list(cluster.nodes.filter(role=Node.Role.HEAD).exclude(state__in=Node.GONE))
    if not heads:
        return
    stopped = [n.pk for n in heads if n.state == N.STOPPED]
    report.heads_retired = nodes_terminate(
        cluster=cluster, nodes=heads, reason="Clusters no longer run a head node."
    )
    Node.objects.filter(pk__in=stopped).exclude(ended_at=None).update(charged_until=F("ended_at"))


def _cluster_state(cluster: Cluster, report: Report) -> None:
    """The cluster's state follows its workers (it has no head node):
    provisioning (a task woke it, its worker is booting) -> ready once a worker runs, or ->
    idle if nothing is left to start (the launch failed, the task was cancelled first);
    ready <-> idle by tasks and live workers; idle longer than the cluster's idle time
    (`Cluster.idle_seconds`) -> stopping (any node still live is terminated) ->
    stopped once none is; the beat no longer syncs a stopped cluster, and its next task wakes
    it (cluster_wake)."""
    now = clock.now()
    cluster.refresh_from_db()
    busy = cluster.tasks.filter(state__in=ACTIVE_TASK_STATES).exists()
    live = cluster.nodes.exclude(state__in=Node.GONE)
    workers = live.filter(role=Node.Role.WORKER).exists()
    with transaction.atomic():
        if (
            cluster.state == C.PROVISIONING
            and live.filter(role=Node.Role.WORKER, state=N.RUNNING).exists()
        ):
            _move(cluster, C.READY, "A worker is running.", idle_since=None)
        elif cluster.state == C.PROVISIONING and not busy and not workers:
            _move(cluster, C.IDLE, "Nothing to start: no task and no worker.", idle_since=now)
        if cluster.state == C.READY and not busy and not workers:
            _move(cluster, C.IDLE, "No tasks and no workers.", idle_since=now)
        elif cluster.state == C.IDLE and (busy or workers):
            _move(cluster, C.READY, "Work arrived.", idle_since=None)
        elif cluster.state == C.STOPPING and not live.exists():
            _move(cluster, C.STOPPED, "Nothing of it runs.")
    if (
        cluster.state == C.IDLE
        and cluster.idle_since
        and now - cluster.idle_since >= dt.timedelta(seconds=cluster.idle_seconds)
    ):
        with transaction.atomic():
            _move(cluster, C.STOPPING, f"Idle for {cluster.idle_seconds} s.")
        left = list(live.exclude(instance_id=""))
        if left:
            nodes_terminate(cluster=cluster, nodes=left, reason="The cluster is stopping.")
        report.stopped = True


def _move(cluster: Cluster, to: str, comment: str, **updates: Any) -> None:
    move(cluster, to=to, comment=comment, **updates)
