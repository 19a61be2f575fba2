"""The `aws` entry of the backend registry: a job becomes a CloudTask on the allocation's
cluster (registered by CloudConfig.ready(); see launcher/backends/registry.py).

How this entry meets the seam's contract (launcher/backends/contract.py, docs/architecture.md):

- The cloud has no scheduler that remembers jobs, so the cloud app keeps that memory itself:
  its `CloudTask`, `Node` and `Interruption` rows are this backend's scheduler state, written
  by the cloud app's services (launcher/cloud/services/). `submit` and `cancel` hand jobs to
  that scheduler (`task_launch`, `task_finish`, `nodes_terminate`: the cloud's sbatch and
  scancel); this module itself writes no row, never a `Job`, never an `Allocation`, and
  `observe` / `fetch` read the task rows, the way `SlurmBackend` reads squeue. `provision`
  only talks to AWS and returns `ClusterProvisioned` (the account, profile and security
  group); launcher/provisioning.py records the cluster row (`ClusterProvisioned.record`) and
  activates the allocation.
- No AWS call ever runs inside a transaction: `submit` stages data in S3 before any write,
  `task_launch` commits the task row and only then (`on_commit`) starts the instances through
  the `cloud.start_task` Celery task; `cancel` terminates first and writes after.
- `submit` is idempotent per token (the task token is `<job token>-<index>`): a retry finds the
  task already written and re-enqueues its start, which is itself idempotent.
- Refusals (budget spent meanwhile, unknown price, allocation no longer active) are permanent
  `BackendError`s, so the launcher fails the job with the reason instead of retrying.

Budget: `price_launch` prices a launch (the catalogue's price x the instance time; PriceUnknown,
400, when nobody knows it). It runs inside the launcher's `job_launch` / `sweep_launch`
transaction (the allocation row locked); the ledger then refuses it when the money is not left
(409 with `estimate_cost` and `remaining_budget`, docs/ledger.md), so nothing is written or
launched. The ledger is the only place that refuses a launch for money.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from decimal import Decimal

from django.core.exceptions import ValidationError
from django.db import transaction

from allocations.models import Allocation, Facility
from allocations.transitions import InvalidTransition
from launcher.backends.contract import (
    BackendError,
    BaseBackend,
    Capability,
    Fetched,
    Observation,
    PathRefused,
    StartEstimate,
    Submission,
    confined,
    project_folder,
)
from launcher.models import Job

from . import clock
from .client import aws_client
from .models import CloudTask, Cluster
from .selectors import gpus_for
from .services.clusters import ClusterProvisioned, cluster_prepare, nodes_terminate
from .services.costs import SOURCE, BudgetExceeded, PriceUnknown, estimate
from .services.tasks import task_finish, task_launch
from .starts import cloud_start_estimate
from .workload import ctxray_argv, job_data_prefix

_STATE = {
    CloudTask.State.QUEUED: "pending",
    CloudTask.State.LAUNCHING: "pending",
    CloudTask.State.RUNNING: "running",
    CloudTask.State.PREEMPTED: "preempted",
    CloudTask.State.SUCCEEDED: "succeeded",
    CloudTask.State.FAILED: "failed",
    CloudTask.State.CANCELLED: "cancelled",
}
LOG_TAIL_BYTES = 20000


def instance_type_for(allocation: Allocation, gpus: int) -> str:
    """The worker type for a job: the allocation's node type, else the facility's smallest
    type with enough GPUs. Raises PriceUnknown (HTTP 400) when the facility has none."""
    node_type = allocation.node_type
    if node_type is not None and node_type.instance_type:
        return node_type.instance_type
    types = [
        nt
        for nt in allocation.facility.node_types.all()
        if nt.instance_type and nt.accelerators_per_node >= gpus
    ]
    if not types:
        raise PriceUnknown(f"The facility has no instance type with {gpus} GPUs.")
    return min(types, key=lambda nt: nt.accelerators_per_node).instance_type


def _ran(task: CloudTask) -> int:
    """Seconds the task's current worker has run it (0: it never ran, e.g. no capacity)."""
    if task.node is None or task.node.running_at is None or task.state == CloudTask.State.QUEUED:
        return 0
    end = task.finished_at or task.node.ended_at or clock.now()
    return max(int((end - task.node.running_at).total_seconds()), 0)


def _hours(wall_time_minutes: int) -> Decimal:
    return Decimal(wall_time_minutes) / 60


class AwsBackend(BaseBackend):
    """Jobs on a cloud cluster: one spot worker per job, resumed after interruptions (by the
    cloud app itself, so no `resume` here)."""

    name = "aws"
    label = "AWS (boto3)"
    usage_source = SOURCE
    capabilities = frozenset(
        {
            Capability.PROVISION,
            Capability.SUBMIT,
            Capability.OBSERVE,
            Capability.FETCH,
            Capability.CANCEL,
            Capability.PRICE_LAUNCH,
            Capability.DATA_PATHS,
            Capability.START_ESTIMATE,
        }
    )

    def start_estimate(
        self, *, allocation: Allocation, user_id: int, gpus: int, wall_time_minutes: int
    ) -> StartEstimate:
        """An idle worker of the allocation's cluster at once, else the measured time to a
        ready worker here, with the recent spot interruption rate (launcher/cloud/starts.py).
        Reads only."""
        return cloud_start_estimate(allocation)

    def resolve_data_path(self, *, facility: Facility, project_code: str, location: str) -> str:
        """Object storage (the facility's bucket) has no symlinks: a location that passed the
        policy's rules (relative, no '..') stays below the project's prefix (`storage_root`
        is a key prefix). Returns the key prefix (launcher.cloud.workload.job_data_prefix)."""
        root = project_folder(facility.backend_settings, project_code)
        normal = posixpath.normpath(f"{root}/{location}")
        if not confined(posixpath.normpath(root), normal):
            raise PathRefused("it lies outside the project's prefix")
        return normal

    def provision(self, *, allocation: Allocation) -> ClusterProvisioned:
        """The bucket, the allocation's prefix and its IAM profile, in AWS; returns them with
        the account (the prefix's name). The provisioning service records the cluster row
        (`ClusterProvisioned.record`)."""
        return cluster_prepare(allocation)

    def price_launch(
        self, *, allocation: Allocation, gpus: int, wall_time_minutes: int, runs: int = 1
    ) -> Decimal:
        """The estimated cost of `runs` jobs of `wall_time_minutes` each, which the ledger then
        checks against what is left (only the ledger refuses a launch for money:
        launcher/services/launch.py); PriceUnknown (400) when no price is known. Reads only."""
        instance_type = instance_type_for(allocation, gpus)
        return estimate(
            allocation=allocation,
            instance_type=instance_type,
            gpus=gpus_for(facility=allocation.facility, instance_type=instance_type),
            hours=_hours(wall_time_minutes) * runs,
        )["cost"]

    def submit(self, *, facility: Facility, jobs: Sequence[Job], token: str) -> Submission:
        """One CloudTask per job (a sweep's cells share `token`); idempotent per token."""
        first = jobs[0]
        cluster = Cluster.objects.filter(allocation_id=first.allocation_id).first()
        if cluster is None:
            raise BackendError("This allocation has no cloud cluster.", permanent=True)
        tokens = [f"{token}-{job.array_index or 0}"[:64] for job in jobs]
        already = CloudTask.objects.filter(token__in=tokens).count() == len(tokens)
        tasks = []
        for job, task_token in zip(jobs, tokens):
            data = job_data_prefix(cluster=cluster, params=job.params)  # S3, before any write
            try:
                tasks.append(
                    task_launch(
                        allocation=job.allocation,
                        by=None,
                        argv=ctxray_argv(job.params, gpus=job.gpus),
                        data_prefix=data,
                        instance_type=instance_type_for(job.allocation, job.gpus),
                        hours=_hours(job.wall_time_minutes),
                        job_id=job.pk,
                        token=task_token,
                    )
                )
            except (
                BudgetExceeded,
                PriceUnknown,
                ValidationError,
                InvalidTransition,
                Allocation.DoesNotExist,
            ) as exc:
                raise BackendError(f"The cloud refused the job: {exc}", permanent=True) from exc
        return Submission(
            scheduler_id=tasks[0].token,
            workdir=tasks[0].prefix,
            output_path=tasks[0].prefix + "out/",
            already_submitted=already,
        )

    def observe(self, *, facility: Facility, jobs: Sequence[Job]) -> dict[int, Observation]:
        tasks = CloudTask.objects.filter(job_id__in=[j.pk for j in jobs]).select_related("node")
        return {
            t.job_id: Observation(
                state=_STATE[CloudTask.State(t.state)],
                reason=t.state_reason,
                exit_code=t.exit_code,
                elapsed_seconds=_ran(t),
            )
            for t in tasks
            if t.job_id is not None
        }

    def fetch(self, *, facility: Facility, job: Job) -> Fetched:
        task = (
            CloudTask.objects.select_related("cluster__facility", "node")
            .filter(job_id=job.pk)
            .first()
        )
        if task is None:
            return Fetched()
        backend = aws_client(task.cluster)
        log_tail = None
        if task.node and task.node.instance_id:  # uploaded when the worker's job ends
            raw = backend.get_bytes(f"{task.prefix}logs/{task.node.instance_id}.log")
            log_tail = raw[-LOG_TAIL_BYTES:].decode(errors="replace") if raw else None
        return Fetched(
            progress=task.progress or None,
            log_tail=log_tail,
            metrics=backend.get_json(f"{task.prefix}out/metrics.json"),
        )

    def cancel(self, *, facility: Facility, jobs: Sequence[Job]) -> None:
        for task in (
            CloudTask.objects.filter(job_id__in=[j.pk for j in jobs])
            .exclude(state__in=CloudTask.FINAL)
            .select_related("cluster__facility", "node")
        ):
            if task.node and task.node.instance_id:  # network first, then the row
                nodes_terminate(cluster=task.cluster, nodes=[task.node], reason="Cancelled.")
            with transaction.atomic():
                task = CloudTask.objects.select_for_update().get(pk=task.pk)
                if task.state not in CloudTask.FINAL:
                    task_finish(task=task, to=CloudTask.State.CANCELLED, reason="Cancelled.")
