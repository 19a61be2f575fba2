"""The launcher's JobRunner for `aws` facilities: a job becomes a CloudTask on the allocation's
cluster (registered in JOB_RUNNERS["aws"] by CloudConfig.ready()).

Contract deviation, on purpose: the cloud's job state lives in this app's rows (which worker,
which attempt, which interruption), so `submit` writes a CloudTask and `observe` reads them; the
AWS calls themselves still happen in Celery tasks after commit, never inside a transaction.
"""
from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

from .models import CloudTask

_STATE = {CloudTask.State.QUEUED: "pending", CloudTask.State.LAUNCHING: "pending",
          CloudTask.State.RUNNING: "running", CloudTask.State.PREEMPTED: "preempted",
          CloudTask.State.SUCCEEDED: "succeeded", CloudTask.State.FAILED: "failed",
          CloudTask.State.CANCELLED: "cancelled"}


def _instance_type(job) -> str:
    node_type = job.allocation.node_type
    if node_type is not None and node_type.instance_type:
        return node_type.instance_type
    types = [nt for nt in job.allocation.facility.node_types.all()
             if nt.instance_type and nt.accelerators_per_node >= job.gpus]
    return min(types, key=lambda nt: nt.accelerators_per_node).instance_type


class CloudRunner:
    """Jobs on a cloud cluster: one spot worker per job, resumed after interruptions."""

    def submit(self, *, facility, jobs: Sequence, token: str):
        from launcher.runners import Submission

        from .models import Cluster
        from .services import task_launch
        from .workload import ctxray_argv, stage_synthetic_dataset

        cluster = Cluster.objects.get(allocation=jobs[0].allocation)
        data = jobs[0].params.get("data_prefix") or stage_synthetic_dataset(cluster=cluster)
        tasks = [task_launch(allocation=job.allocation, by=None, argv=ctxray_argv(job.params),
                             data_prefix=data, instance_type=_instance_type(job),
                             hours=Decimal(job.wall_time_minutes) / 60, job_id=job.pk,
                             token=f"{token}-{job.array_index or 0}"[:64])
                 for job in jobs]
        return Submission(scheduler_id=tasks[0].token, workdir=tasks[0].prefix,
                          output_path=tasks[0].prefix + "out/")

    def observe(self, *, facility, jobs: Sequence) -> dict:
        from launcher.runners import Observation

        tasks = CloudTask.objects.filter(job_id__in=[j.pk for j in jobs])
        return {t.job_id: Observation(state=_STATE[t.state], reason=t.state_reason,
                                      exit_code=t.exit_code) for t in tasks}

    def fetch(self, *, facility, job):
        from launcher.runners import Fetched

        from .backend import backend_for

        task = CloudTask.objects.select_related("cluster__facility").filter(job_id=job.pk).first()
        if task is None:
            return Fetched()
        backend = backend_for(task.cluster)
        return Fetched(progress=task.progress or None,
                       metrics=backend.get_json(f"{task.prefix}out/metrics.json"))

    def cancel(self, *, facility, jobs: Sequence) -> None:
        from django.db import transaction

        from .services.clusters import nodes_terminate
        from .services.tasks import task_finish

        for task in CloudTask.objects.filter(job_id__in=[j.pk for j in jobs]).exclude(
                state__in=CloudTask.FINAL).select_related("cluster", "node"):
            if task.node and task.node.instance_id:
                nodes_terminate(cluster=task.cluster, nodes=[task.node], reason="Cancelled.")
            with transaction.atomic():
                task_finish(task=task, to=CloudTask.State.CANCELLED, reason="Cancelled.")


def register() -> None:
    """Register the cloud runner for `aws` facilities."""
    from launcher.runners import JOB_RUNNERS

    JOB_RUNNERS["aws"] = CloudRunner()


def job_sync_after_commit(task) -> None:
    """The launcher's job monitor polls `observe`; nothing to push (kept as the one hook)."""
