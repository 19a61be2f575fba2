"""Celery tasks of the cloud app: ids in, one service call, retry decisions. All idempotent."""

from __future__ import annotations

from celery import shared_task
from django.db.models import Exists, F, OuterRef, Q

from allocations.models import Facility
from core.locks import exclusive
from launcher.backends.contract import BackendError

from . import services
from .backend import AwsBackend
from .models import CloudTask, Cluster, Node
from .selectors import ACTIVE_TASK_STATES

LIVE_CLUSTERS = (
    Cluster.State.PROVISIONING,
    Cluster.State.READY,
    Cluster.State.IDLE,
    Cluster.State.STOPPING,
)


@shared_task(name="cloud.start_task", bind=True, acks_late=True, max_retries=5)
def start_task(self, task_id: int) -> str:
    try:
        return services.task_start(task_id=task_id).state
    except BackendError as exc:
        if not exc.permanent:
            raise self.retry(exc=exc, countdown=10) from exc
        raise


@shared_task(name="cloud.sync_cluster", acks_late=True)
def sync_cluster(cluster_id: int) -> dict:
    return services.cluster_sync(cluster_id=cluster_id).__dict__


def clusters_to_sync():
    """Live clusters, and any other (failed, or stopped after the allocation expired or was
    closed) while anything of theirs still runs, is not yet charged up to its end, or has a
    task not yet final: a worker must not run on unbilled, and usage is charged whatever the
    allocation's state. A stopped instance (disk only, not billed) does not count."""
    nodes = Node.objects.filter(cluster=OuterRef("pk")).exclude(state=Node.State.STOPPED)
    running = nodes.exclude(state__in=Node.GONE).exclude(instance_id="")
    owing = nodes.exclude(running_at=None).filter(
        Q(charged_until__isnull=True)
        | Q(ended_at__isnull=True)
        | Q(charged_until__lt=F("ended_at"))
    )
    unfinished = CloudTask.objects.filter(cluster=OuterRef("pk"), state__in=ACTIVE_TASK_STATES)
    return Cluster.objects.filter(
        Q(state__in=LIVE_CLUSTERS) | Q(Exists(running)) | Q(Exists(owing)) | Q(Exists(unfinished))
    )


@shared_task(name="cloud.sync_all", acks_late=True, ignore_result=True)
@exclusive("cloud.sync_all")
def sync_all() -> int:
    """The 5-second beat: one sync per cluster that needs it (in-line: a pass takes well
    under 5 s)."""
    ids = list(clusters_to_sync().values_list("pk", flat=True))
    for cluster_id in ids:
        try:
            services.cluster_sync(cluster_id=cluster_id)
        except BackendError:
            continue  # the next beat tries again
    return len(ids)


@shared_task(name="cloud.reconcile", acks_late=True)
@exclusive("cloud.reconcile")
def reconcile() -> int:
    terminated = 0
    for facility in Facility.objects.filter(
        backend=AwsBackend.name, is_active=True, clusters__isnull=False
    ).distinct():
        terminated += len(services.cloud_reconcile(facility=facility).orphans_terminated)
    return terminated


@shared_task(name="cloud.stop_workers", acks_late=True)
def stop_workers(cluster_id: int, reason: str) -> int:
    return services.cluster_stop_workers(cluster_id=cluster_id, reason=reason)
