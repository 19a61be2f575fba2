"""A job: one training run launched against an allocation, on any backend.

The fields are backend-neutral: `scheduler_id` is a Slurm job id or a cloud task id,
`array_index` the task within a Slurm array (a sweep cell), `token` the unique name that makes
submission idempotent (looked up before any re-submission).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class Job(models.Model):
    class State(models.TextChoices):
        QUEUED = "queued", "Queued"
        SUBMITTING = "submitting", "Submitting"
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        PREEMPTED = "preempted", "Preempted"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"
        TIMEOUT = "timeout", "Timed out"
        # A sweep cell whose configuration ranked outside the top 1/eta at a rung (ASHA,
        # launcher/search/asha.py): charged what it ran, its reservation released.
        STOPPED_EARLY = "stopped_early", "Stopped early"

    FINAL = (State.SUCCEEDED, State.FAILED, State.CANCELLED, State.TIMEOUT, State.STOPPED_EARLY)
    # States in which the scheduler holds (or may hold) the job: polled by the monitor.
    LIVE = (State.SUBMITTING, State.PENDING, State.RUNNING, State.PREEMPTED)

    class Workload(models.TextChoices):
        CTXRAY_TRAIN = "ctxray-train", "CT/X-ray training"

    # Indexed by `job_allocation_created` below, which starts with it.
    allocation = models.ForeignKey(
        "allocations.Allocation", on_delete=models.PROTECT, related_name="jobs", db_index=False
    )
    sweep = models.ForeignKey(
        "launcher.Sweep", on_delete=models.CASCADE, null=True, blank=True, related_name="jobs"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="launched_jobs"
    )
    workload = models.CharField(
        max_length=40, choices=Workload.choices, default=Workload.CTXRAY_TRAIN
    )
    # Validated workload parameters (model, epochs, dataset, lr, ...): see launcher/bundles.py.
    params = models.JSONField(default=dict, blank=True)
    gpus = models.PositiveSmallIntegerField(default=1)
    wall_time_minutes = models.PositiveIntegerField(default=60)
    estimate_gpu_hours = models.DecimalField(max_digits=12, decimal_places=3, default=0)
    estimate_cost = models.DecimalField(max_digits=12, decimal_places=4, default=0)
    estimate_source = models.CharField(max_length=40, blank=True)
    # The recommender's prediction at launch (launcher/estimates.py): its basis in a sentence,
    # confidence, the benchmark result it rests on, and one run's predicted wall hours and
    # throughput, unclamped by the wall time (kept to measure the recommender's error).
    estimate_basis = models.TextField(blank=True)
    estimate_confidence = models.CharField(max_length=10, blank=True)
    estimate_neighbour = models.CharField(max_length=300, blank=True)
    predicted_hours = models.DecimalField(max_digits=14, decimal_places=6, null=True, blank=True)
    predicted_images_per_s = models.FloatField(null=True, blank=True)
    # Placement (docs/placement.md), for a launch that asked for "auto": the ranking at that
    # moment (`prefer`, the chosen allocation and the alternatives with their predicted wait,
    # run, finish, cost and reasons, the sentence the job page shows), and the predicted wait
    # (seconds from launch to start) and finish, measured against started_at - created_at and
    # finished_at (launcher/placement_selectors.py: placement_errors).
    placement = models.JSONField(null=True, blank=True)
    predicted_wait_seconds = models.PositiveIntegerField(null=True, blank=True)
    predicted_finish_at = models.DateTimeField(null=True, blank=True)
    # What this run measured, written back once it succeeded (launcher/services/measurement.py).
    benchmark_result = models.OneToOneField(
        "benchmarks.BenchmarkResult",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="job",
    )

    state = models.CharField(
        max_length=16, choices=State.choices, default=State.QUEUED, db_index=True
    )
    # Why it waits or failed: the scheduler's pending reason, an exit code, a backend error.
    state_reason = models.CharField(max_length=300, blank=True)
    token = models.CharField(max_length=64, db_index=True)
    scheduler_id = models.CharField(max_length=64, blank=True, db_index=True)
    array_index = models.PositiveIntegerField(null=True, blank=True)
    # A staged sweep's cell the portal has not released to the scheduler yet (it reserves
    # nothing until released: launcher/services/sweeps.py).
    held = models.BooleanField(default=False)
    # Early stopping: the epochs this cell had finished when its configuration was stopped,
    # and the rung (0-based) at which it was judged (the furthest one it passed otherwise).
    stopped_at_epoch = models.PositiveIntegerField(null=True, blank=True)
    rung = models.PositiveSmallIntegerField(null=True, blank=True)
    workdir = models.CharField(max_length=300, blank=True)
    output_path = models.CharField(max_length=300, blank=True)
    exit_code = models.IntegerField(null=True, blank=True)

    # The training's own progress.json (epoch, step, loss, images_per_s, eta_s, ...) plus a
    # `history` of (step, loss) points for the loss curve; metrics.json once it has finished.
    progress = models.JSONField(default=dict, blank=True)
    metrics = models.JSONField(null=True, blank=True)
    gpu_seconds = models.BigIntegerField(default=0)
    # Mean utilisation (percent) the trainer sampled over its run: of the GPUs through NVML
    # where it had GPUs, else of the CPU (source says which); empty if it reported none.
    utilisation_mean = models.FloatField(null=True, blank=True)
    utilisation_source = models.CharField(
        max_length=3, blank=True, choices=[("gpu", "GPU"), ("cpu", "CPU")]
    )
    log_tail = models.TextField(blank=True)
    # When staff were told of this job's failure (the failing-jobs digest tells each once).
    failure_alerted_at = models.DateTimeField(null=True, blank=True)
    # Preemption (running -> preempted -> pending): how often the job was resubmitted from its
    # checkpoint, and the GPU-seconds of its earlier attempts (gpu_seconds includes them).
    resumes = models.PositiveSmallIntegerField(default=0)
    prior_gpu_seconds = models.BigIntegerField(default=0)

    # Submission survives outages (launcher/services/submission.py): one owner at a time holds a
    # lease until `submit_lease_until`; a failed attempt sets the next one (exponential backoff)
    # and the first failure at or after `submit_deadline` fails the job with its last error.
    submit_attempts = models.PositiveSmallIntegerField(default=0)
    submit_lease_owner = models.CharField(max_length=32, blank=True)
    submit_lease_until = models.DateTimeField(null=True, blank=True)
    submit_next_at = models.DateTimeField(null=True, blank=True)
    submit_deadline = models.DateTimeField(null=True, blank=True)

    created_at = models.DateTimeField(default=timezone.now)
    submitted_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    polled_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["token"], condition=models.Q(sweep__isnull=True), name="job_token_unique"
            ),
            models.UniqueConstraint(fields=["sweep", "array_index"], name="job_sweep_cell_unique"),
        ]
        indexes = [
            models.Index(fields=["allocation", "state"]),
            # Lists newest first (the API, the staff home) and reports' `since`: by index, not a
            # sort of every job (docs/performance.md, "A centre's scale").
            models.Index(fields=["created_at", "id"], name="job_created"),
            # A member's jobs (their projects' allocations) newest first: a page's ids from the
            # index alone, at any page (launcher.api.views.JobViewSet, pages by id).
            models.Index(fields=["allocation", "created_at", "id"], name="job_allocation_created"),
            # Jobs that ended lately in a state: the staff home's failures, the poll's files due.
            models.Index(fields=["state", "finished_at"], name="job_state_finished"),
            # The reports' p90 wait over a period: the waits of the jobs that started, read
            # from the index alone (no heap pages of logs and progress).
            models.Index(
                fields=["created_at"],
                include=["submitted_at", "started_at"],
                condition=models.Q(started_at__isnull=False, submitted_at__isnull=False),
                name="job_waits",
            ),
        ]

    def __str__(self) -> str:
        return f"Job #{self.pk} ({self.get_state_display()})"

    @property
    def is_final(self) -> bool:
        return self.state in self.FINAL

    @property
    def real_wait_seconds(self) -> float | None:
        """Seconds from launch to start (None until it started): placement's wait, measured."""
        if self.started_at is None:
            return None
        return max(0.0, (self.started_at - self.created_at).total_seconds())

    @property
    def images_per_s(self) -> float | None:
        """The job's throughput, its one definition (pages, API, the benchmark result it
        becomes): images trained per second of training steps, all ranks, as the run measured
        it (validation and start-up not counted): metrics.json's figure for the whole run once
        it has one, else the trainer's running figure in progress.json; None if not reported."""
        measured = (self.metrics or {}).get("measured") or {}
        progress = self.progress or {}
        value = (
            measured.get("train_images_per_s")
            or progress.get("train_images_per_s")
            or progress.get("images_per_s")
        )
        return float(value) if value else None

    @property
    def percent(self) -> float:
        """Training progress as a percentage of all steps (0 before the first report)."""
        if self.state == self.State.SUCCEEDED:
            return 100.0
        p = self.progress or {}
        epochs, spe = p.get("epochs") or 0, p.get("steps_per_epoch") or 0
        if not epochs or not spe:
            return 0.0
        done = (max(int(p.get("epoch") or 1), 1) - 1) * spe + int(p.get("step") or 0)
        return round(min(100.0, 100.0 * done / (epochs * spe)), 1)
