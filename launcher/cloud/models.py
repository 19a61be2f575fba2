"""Cloud clusters: one per allocation, spot workers only (no head node), the tasks they run, the
interruptions they suffer, and the price catalogue that costs them."""

from __future__ import annotations

from decimal import Decimal

from django.db import models
from django.utils import timezone


class PriceCatalogueEntry(models.Model):
    """An hourly price for one instance type, region and market, with where it came from.

    The catalogue, not the cloud's API, is the source of truth for costs: moto's spot prices
    are dummies and AWS's pricing API is not reachable everywhere."""

    class Market(models.TextChoices):
        ON_DEMAND = "on-demand", "On-demand"
        SPOT = "spot", "Spot"

    region = models.CharField(max_length=30)
    instance_type = models.CharField(max_length=40)
    market = models.CharField(max_length=10, choices=Market.choices)
    price_per_hour = models.DecimalField(max_digits=10, decimal_places=5)
    currency = models.CharField(max_length=3, default="USD")
    gpus = models.PositiveSmallIntegerField(default=0)
    source = models.CharField(max_length=200)
    source_url = models.URLField(blank=True)
    as_of = models.DateField()
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["region", "instance_type", "market"]
        verbose_name_plural = "price catalogue"
        constraints = [
            models.UniqueConstraint(
                fields=["region", "instance_type", "market"], name="price_unique_per_market"
            )
        ]

    def __str__(self) -> str:
        return f"{self.instance_type} {self.market} {self.region}: {self.price_per_hour}/h"


class Cluster(models.Model):
    class State(models.TextChoices):
        REQUESTED = "requested", "Requested"
        PROVISIONING = "provisioning", "Provisioning"
        READY = "ready", "Ready"
        IDLE = "idle", "Idle"
        STOPPING = "stopping", "Stopping"
        STOPPED = "stopped", "Stopped"
        FAILED = "failed", "Failed"

    allocation = models.OneToOneField(
        "allocations.Allocation", on_delete=models.PROTECT, related_name="cluster"
    )
    facility = models.ForeignKey(
        "allocations.Facility", on_delete=models.PROTECT, related_name="clusters"
    )
    state = models.CharField(
        max_length=12, choices=State.choices, default=State.REQUESTED, db_index=True
    )
    state_reason = models.CharField(max_length=300, blank=True)
    region = models.CharField(max_length=30)
    bucket = models.CharField(max_length=63)
    prefix = models.CharField(max_length=100)  # S3 prefix for data and checkpoints
    allow_on_demand = models.BooleanField(default=False)
    worker_idle_seconds = models.PositiveIntegerField(default=300)
    # The cluster's idle time (no task, no worker) before it is stopped (clusters have no head
    # node; this was `head_idle_seconds` before migration 0005).
    idle_seconds = models.PositiveIntegerField(default=900)
    idle_since = models.DateTimeField(null=True, blank=True)
    # Least privilege: the IAM instance profile every node runs as (the allocation's prefix
    # only) and the facility's security group (no inbound rule).
    instance_profile = models.CharField(max_length=128, blank=True)
    security_group_id = models.CharField(max_length=40, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"Cluster #{self.pk} ({self.get_state_display()})"


class Node(models.Model):
    class Role(models.TextChoices):
        HEAD = "head", "Head"  # older versions only; the sync terminates such nodes
        WORKER = "worker", "Worker"

    class State(models.TextChoices):
        REQUESTED = "requested", "Requested"  # row written, RunInstances not yet answered
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        STOPPING = "stopping", "Stopping"
        STOPPED = "stopped", "Stopped"
        TERMINATED = "terminated", "Terminated"
        INTERRUPTED = "interrupted", "Interrupted"
        LOST = "lost", "Lost"  # the cloud no longer knows the instance
        FAILED = "failed", "Failed"  # never started: no capacity anywhere allowed

    GONE = (State.TERMINATED, State.INTERRUPTED, State.LOST, State.FAILED)
    BILLED = (State.PENDING, State.RUNNING, State.STOPPING)

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="nodes")
    role = models.CharField(max_length=8, choices=Role.choices)
    token = models.CharField(max_length=64, unique=True)  # ClientToken and `portal:token` tag
    instance_id = models.CharField(max_length=32, blank=True, db_index=True)
    instance_type = models.CharField(max_length=40)
    market = models.CharField(max_length=10, choices=PriceCatalogueEntry.Market.choices)
    zone = models.CharField(max_length=30, blank=True)
    gpus = models.PositiveSmallIntegerField(default=0)
    price_per_hour = models.DecimalField(max_digits=10, decimal_places=5, default=Decimal("0"))
    state = models.CharField(
        max_length=12, choices=State.choices, default=State.REQUESTED, db_index=True
    )
    state_reason = models.CharField(max_length=300, blank=True)
    attempts = models.JSONField(default=list, blank=True)  # capacity refusals on the way
    # The image the instance booted, and where that id came from (an SSM parameter looked up
    # at launch, or the facility's pinned image_id).
    image_id = models.CharField(max_length=32, blank=True)
    image_source = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    running_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    charged_until = models.DateTimeField(null=True, blank=True)
    idle_since = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["cluster", "role", "id"]

    def __str__(self) -> str:
        return f"{self.role} {self.instance_id or self.token} ({self.state})"


class CloudTask(models.Model):
    """One training run on the cluster: which node runs it, where its checkpoints live.

    `job_id` names the launcher's Job when the job runner started it (kept as a plain id so
    this app needs nothing of the Job model's migrations)."""

    class State(models.TextChoices):
        QUEUED = "queued", "Queued"
        LAUNCHING = "launching", "Launching"
        RUNNING = "running", "Running"
        PREEMPTED = "preempted", "Preempted"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    FINAL = (State.SUCCEEDED, State.FAILED, State.CANCELLED)

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="tasks")
    job_id = models.PositiveBigIntegerField(null=True, blank=True, db_index=True)
    token = models.CharField(max_length=64, unique=True)
    node = models.ForeignKey(
        Node, on_delete=models.SET_NULL, null=True, blank=True, related_name="tasks"
    )
    instance_type = models.CharField(max_length=40)
    gpus = models.PositiveSmallIntegerField(default=1)
    argv = models.JSONField(default=list)
    data_prefix = models.CharField(max_length=200)
    state = models.CharField(
        max_length=12, choices=State.choices, default=State.QUEUED, db_index=True
    )
    state_reason = models.CharField(max_length=300, blank=True)
    attempt = models.PositiveSmallIntegerField(default=1)
    progress = models.JSONField(default=dict, blank=True)
    exit_code = models.IntegerField(null=True, blank=True)
    estimate_cost = models.DecimalField(max_digits=12, decimal_places=4, default=0)
    # The run time the task may use, over all its attempts (the job's wall time): the agent
    # stops it there. Null: tasks from before the limit existed.
    wall_seconds = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"Task {self.token} ({self.state})"

    @property
    def prefix(self) -> str:
        return f"{self.cluster.prefix}tasks/{self.token}/"


class Interruption(models.Model):
    """A spot worker taken back by the cloud while it ran a task."""

    class Source(models.TextChoices):
        NOTICE = "notice", "Two-minute notice"
        REBALANCE = "rebalance", "Rebalance recommendation"
        INSTANCE_STATE = "instance-state", "Instance state"
        SPOT_REQUEST = "spot-request", "Spot request status"

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="interruptions")
    task = models.ForeignKey(
        CloudTask, on_delete=models.CASCADE, null=True, blank=True, related_name="interruptions"
    )
    source = models.CharField(max_length=16, choices=Source.choices)
    detected_at = models.DateTimeField(default=timezone.now)
    notice_at = models.DateTimeField(null=True, blank=True)
    # Where the task stood: the epoch reached and the epoch it resumes from (its checkpoint).
    epoch_at_interruption = models.PositiveIntegerField(default=0)
    checkpoint_epoch = models.PositiveIntegerField(null=True, blank=True)
    work_lost_seconds = models.FloatField(default=0)
    replacement = models.ForeignKey(
        Node, on_delete=models.SET_NULL, null=True, blank=True, related_name="replaces"
    )
    resumed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-detected_at"]
        constraints = [models.UniqueConstraint(fields=["node"], name="one_interruption_per_node")]


class Installation(models.Model):
    """This portal installation's id (one row, created the first time the cloud needs it and
    kept): every cloud resource the portal writes carries it in its `portal:installation` tag
    and every instance lookup filters on it, so two portals sharing an AWS account never adopt
    or terminate each other's instances. `settings.PORTAL_INSTALLATION_ID` overrides it."""

    value = models.CharField(max_length=40, unique=True)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return self.value
