"""Allowed state moves (tables, not scattered ifs) for clusters, nodes and tasks."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from allocations.transitions import transition

from .models import CloudTask, Cluster, Node

C, N, T = Cluster.State, Node.State, CloudTask.State

CLUSTER_MOVES: dict[str, tuple[str, ...]] = {
    C.REQUESTED: (C.PROVISIONING, C.FAILED, C.STOPPED),
    C.PROVISIONING: (C.READY, C.IDLE, C.FAILED, C.STOPPING),
    C.READY: (C.IDLE, C.STOPPING, C.FAILED),
    C.IDLE: (C.READY, C.PROVISIONING, C.STOPPING, C.FAILED),
    C.STOPPING: (C.STOPPED, C.FAILED),
    C.STOPPED: (C.PROVISIONING,),
    C.FAILED: (C.PROVISIONING,),
}

NODE_MOVES: dict[str, tuple[str, ...]] = {
    N.REQUESTED: (N.PENDING, N.RUNNING, N.FAILED, N.TERMINATED),
    N.PENDING: (N.RUNNING, N.STOPPING, N.STOPPED, N.TERMINATED, N.INTERRUPTED, N.LOST),
    N.RUNNING: (N.STOPPING, N.STOPPED, N.TERMINATED, N.INTERRUPTED, N.LOST),
    N.STOPPING: (N.STOPPED, N.TERMINATED, N.LOST),
    N.STOPPED: (N.PENDING, N.RUNNING, N.TERMINATED, N.LOST),
}

TASK_MOVES: dict[str, tuple[str, ...]] = {
    T.QUEUED: (T.LAUNCHING, T.CANCELLED, T.FAILED),
    T.LAUNCHING: (T.RUNNING, T.PREEMPTED, T.SUCCEEDED, T.FAILED, T.CANCELLED),
    T.RUNNING: (T.PREEMPTED, T.SUCCEEDED, T.FAILED, T.CANCELLED),
    # The job may finish before the notice stops it: nothing to resume.
    T.PREEMPTED: (T.LAUNCHING, T.SUCCEEDED, T.FAILED, T.CANCELLED),
}

TABLES: dict[type, Mapping[str, Iterable[str]]] = {
    Cluster: CLUSTER_MOVES,
    Node: NODE_MOVES,
    CloudTask: TASK_MOVES,
}


def move(obj: Cluster | Node | CloudTask, *, to: str, comment: str = "", actor=None, **updates):
    """Compare-and-swap `obj.state` to `to` by its table, with an audit event (inside the
    caller's transaction)."""
    return transition(
        obj, to=to, table=TABLES[type(obj)], field="state", actor=actor, comment=comment, **updates
    )
