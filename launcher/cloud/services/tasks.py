"""Tasks on a cluster: launch (after a budget check), start on a worker, finish, cancel, and
recover from spot interruptions by resuming on a replacement worker from the S3 checkpoint."""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import asdict
from decimal import Decimal

from django.db import transaction

from allocations.models import Allocation
from allocations.selectors import User, visible_allocations
from allocations.transitions import InvalidTransition
from core.errors import NON_FIELD, Invalid
from core.tasks import enqueue

from .. import bundle, clock
from ..client import aws_client
from ..models import CloudTask, Cluster, Interruption, Node
from ..selectors import ACTIVE_TASK_STATES, gpus_for
from ..states import move
from ..userdata import NodeConfig, WorkerSpec, assignment_key, render
from .clusters import cluster_wake, new_token, node_create, node_launch, nodes_terminate
from .costs import check_budget, estimate

T = CloudTask.State


@transaction.atomic
def task_launch(
    *,
    allocation: Allocation,
    by: User | None,
    argv: list[str],
    data_prefix: str,
    instance_type: str,
    hours: Decimal,
    job_id: int | None = None,
    token: str | None = None,
) -> CloudTask:
    """Queue a training run on the allocation's cluster and start it after commit.

    Checks: `by` may see the allocation, it is active, it has a cluster, and the estimated cost
    of `hours` on `instance_type` fits what is left (BudgetExceeded otherwise, HTTP 409).
    Idempotent on `token`: the same token returns the task already launched."""
    if token and (existing := CloudTask.objects.filter(token=token).first()):
        if existing.state == T.QUEUED:  # its start may have been lost with a crash: again
            enqueue("cloud.start_task", existing.pk)
        return existing
    if by is not None and not visible_allocations(by).filter(pk=allocation.pk).exists():
        raise Allocation.DoesNotExist
    if allocation.status != Allocation.Status.ACTIVE:
        raise InvalidTransition(allocation, allocation.status, "launch")
    cluster = Cluster.objects.filter(allocation=allocation).first()
    if cluster is None:
        raise Invalid("This allocation has no cloud cluster.", field=NON_FIELD)
    gpus = gpus_for(facility=allocation.facility, instance_type=instance_type)
    if job_id is None:  # a task of its own: the ledger's money check happens here
        cost = check_budget(
            allocation=allocation, instance_type=instance_type, gpus=gpus, hours=hours
        )
    else:  # a launcher job's: checked and reserved by the ledger at launch
        cost = estimate(allocation=allocation, instance_type=instance_type, gpus=gpus, hours=hours)[
            "cost"
        ]
    task = CloudTask.objects.create(
        cluster=cluster,
        job_id=job_id,
        token=token or new_token("t"),
        argv=list(argv),
        data_prefix=data_prefix,
        instance_type=instance_type,
        gpus=gpus,
        estimate_cost=cost,
        wall_seconds=math.ceil(hours * 3600),
    )
    warm = _warm_worker(cluster, instance_type)
    if warm is None:
        _assign(task, node_create(cluster=cluster, instance_type=instance_type, gpus=gpus))
    else:  # a worker of this allocation that finished its task takes this one: no new boot
        Node.objects.filter(pk=warm.pk).update(idle_since=None)
        _assign(task, warm)
    return task


def _warm_worker(cluster: Cluster, instance_type: str) -> Node | None:
    """A running worker of the cluster with this instance type and no active task, the one
    idle longest first; locked (others skip it) so two launches never share it."""
    busy = CloudTask.objects.filter(
        cluster=cluster, state__in=ACTIVE_TASK_STATES, node__isnull=False
    ).values("node")
    return (
        Node.objects.select_for_update(skip_locked=True)
        .filter(
            cluster=cluster,
            role=Node.Role.WORKER,
            state=Node.State.RUNNING,
            instance_type=instance_type,
        )
        .exclude(pk__in=busy)
        .exclude(pk__in=Interruption.objects.values("node"))
        .order_by("idle_since", "pk")
        .first()
    )


def _assign(task: CloudTask, node: Node) -> Node:
    CloudTask.objects.filter(pk=task.pk).update(node=node)
    task.node = node
    enqueue("cloud.start_task", task.pk)
    return node


def deadline_seconds(task: CloudTask) -> float | None:
    """The run time the task's next attempt may use: its wall time less what the workers of
    its earlier, interrupted attempts ran (from running to ended), never below 0."""
    if task.wall_seconds is None:
        return None
    ran = 0.0
    for node in Node.objects.filter(interruptions__task=task).distinct():
        if node.running_at is not None:
            ran += ((node.ended_at or clock.now()) - node.running_at).total_seconds()
    return max(task.wall_seconds - ran, 0.0)


def worker_spec(task: CloudTask) -> WorkerSpec:
    return WorkerSpec(
        bucket=task.cluster.bucket,
        task_prefix=task.prefix,
        data_prefix=task.data_prefix,
        argv=list(task.argv),
        deadline_seconds=deadline_seconds(task),
    )


def node_config(node: Node, worker_bundle: bundle.Bundle) -> NodeConfig:
    cluster = node.cluster
    return NodeConfig(
        bucket=cluster.bucket,
        region=cluster.region,
        prefix=cluster.prefix,
        cluster=cluster.pk,
        node=node.pk,
        node_token=node.token,
        role=node.role,
        bundle_key=worker_bundle.key(cluster.prefix),
        bundle_sha256=worker_bundle.sha256,
    )


def _publish(task: CloudTask, node: Node) -> bundle.Bundle:
    """Put the worker bundle (once per version) and the task's assignment in the node's queue,
    both under the allocation's prefix. Network only; idempotent."""
    cluster = task.cluster
    backend = aws_client(cluster)
    worker_bundle = bundle.current()
    key = worker_bundle.key(cluster.prefix)
    if not backend.exists(key):
        backend.put_bytes(key, worker_bundle.data)
    backend.put_json(
        assignment_key(prefix=cluster.prefix, node_token=node.token), asdict(worker_spec(task))
    )
    return worker_bundle


def task_start(*, task_id: int) -> CloudTask:
    """Start (or restart after an interruption) the task: its assignment goes to the node's
    queue in S3, then, unless the node is a warm worker already running, the worker is
    launched (capacity fallback) with the bootstrap user data; a stopped cluster wakes
    (`provisioning`). No head node is launched. Idempotent:
    re-running adopts what already started and rewrites the same assignment."""
    task = CloudTask.objects.select_related("cluster__facility", "node").get(pk=task_id)
    if task.state not in (T.QUEUED, T.LAUNCHING) or task.node is None:
        return task
    with transaction.atomic():
        if task.state == T.QUEUED:
            move(task, to=T.LAUNCHING, comment="Launching a worker.")
    cluster_wake(cluster_id=task.cluster_id)
    node = task.node
    worker_bundle = _publish(task, node)
    if node.state == Node.State.REQUESTED:
        node = node_launch(node_id=node.pk, user_data=render(node_config(node, worker_bundle)))
    if node.state == Node.State.FAILED:
        with transaction.atomic():
            task_finish(task=task, to=T.FAILED, reason=node.state_reason)
    return task


def task_finish(
    *,
    task: CloudTask,
    to: str,
    reason: str = "",
    exit_code: int | None = None,
    progress: dict | None = None,
) -> CloudTask:
    """Move the task to a final state; its worker becomes idle (terminated after the idle
    timeout). Runs inside the caller's transaction."""
    now = clock.now()
    move(
        task,
        to=to,
        comment=reason,
        state_reason=reason[:300],
        finished_at=now,
        exit_code=exit_code,
        progress=progress if progress is not None else task.progress,
    )
    if task.node_id:
        Node.objects.filter(pk=task.node_id, idle_since=None).update(idle_since=now)
    return task


def tasks_cancel_all(*, cluster: Cluster, reason: str) -> int:
    cancelled = 0
    for task in cluster.tasks.filter(state__in=ACTIVE_TASK_STATES):
        with transaction.atomic():
            task_finish(task=task, to=T.CANCELLED, reason=reason)
            cancelled += 1
    return cancelled


@transaction.atomic
def task_running(*, task: CloudTask, progress: dict) -> CloudTask:
    """The worker reported the task running: mark it so, and close the interruption it
    resumed from."""
    now = clock.now()
    if task.state == T.LAUNCHING:
        move(task, to=T.RUNNING, comment="Running.", progress=progress)
        Interruption.objects.filter(task=task, replacement=task.node_id, resumed_at=None).update(
            resumed_at=now
        )
    elif CloudTask.objects.filter(pk=task.pk, state=task.state).update(progress=progress):
        task.progress = progress  # (never over a task another pass has just finished)
    return task


@transaction.atomic
def task_interrupted(
    *, task: CloudTask, node: Node, source: str, notice_at: dt.datetime | None = None
) -> Interruption:
    """Record that the cloud is taking the task's spot worker back, and mark the task preempted.
    Idempotent per node (one interruption row per node)."""
    progress = task.progress or {}
    epoch = int(progress.get("epoch") or 0)
    done_epochs = epoch - 1 if progress.get("step") else epoch
    interruption, created = Interruption.objects.get_or_create(
        node=node,
        defaults=dict(
            task=task,
            source=source,
            detected_at=clock.now(),
            notice_at=notice_at,
            epoch_at_interruption=epoch,
            checkpoint_epoch=max(done_epochs, 0),
        ),
    )
    if created and task.state in (T.LAUNCHING, T.RUNNING):
        move(task, to=T.PREEMPTED, comment=f"Spot interruption ({source}) on {node.instance_id}.")
    return interruption


@transaction.atomic
def task_replace_worker(*, task: CloudTask, checkpoint: dict | None) -> Node | None:
    """Start a replacement worker for a preempted task; it resumes from the checkpoint in S3.
    The work lost is the time between the last checkpoint and the interruption."""
    task = CloudTask.objects.select_for_update().select_related("cluster").get(pk=task.pk)
    if task.state != T.PREEMPTED:
        return task.node  # another pass replaced it already (or the task ended)
    interruption = Interruption.objects.filter(task=task, replacement=None).first()
    node = node_create(cluster=task.cluster, instance_type=task.instance_type, gpus=task.gpus)
    if interruption:
        lost = 0.0
        if checkpoint and checkpoint.get("saved_at"):
            saved = dt.datetime.fromisoformat(checkpoint["saved_at"])
            lost = max((interruption.detected_at - saved).total_seconds(), 0.0)
            interruption.checkpoint_epoch = int(checkpoint.get("epoch", 0) or 0)
        if checkpoint and checkpoint.get("graceful"):
            lost = 0.0  # the job checkpointed on the notice itself
        interruption.replacement = node
        interruption.work_lost_seconds = lost
        interruption.save(update_fields=["replacement", "work_lost_seconds", "checkpoint_epoch"])
    move(
        task,
        to=T.LAUNCHING,
        comment="Resuming on a replacement worker.",
        node=node,
        attempt=task.attempt + 1,
    )
    enqueue("cloud.start_task", task.pk)
    return node


def cluster_stop_workers(*, cluster_id: int, reason: str) -> int:
    """Terminate every live worker and cancel the tasks they run (budget spent, allocation
    suspended or exhausted). Idempotent."""
    cluster = Cluster.objects.select_related("facility").get(pk=cluster_id)
    workers = list(cluster.nodes.filter(role=Node.Role.WORKER).exclude(state__in=Node.GONE))
    ended = nodes_terminate(cluster=cluster, nodes=workers, reason=reason)
    tasks_cancel_all(cluster=cluster, reason=reason)
    return ended
