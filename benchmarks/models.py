"""Benchmark data in the database: workloads and the results measured or published for them.

Not imported by `benchmarks/__init__`, so the standalone harness (`benchmarks.harness`) stays
Django-free. Conversions to the recommender's plain dataclasses live in `selectors.py`.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from benchmarks.recommender.types import PRECISIONS, STRATEGIES

# Members of this group (and staff) may record benchmark results through the API.
BENCHMARKERS_GROUP = "benchmarkers"


class Workload(models.Model):
    """A trainable model at one dimensionality, with per-sample costs at `reference_size`.

    `reference_size` is pixels per side (dims 2 and 3) or tokens per sample (dims 1).
    """

    class Family(models.TextChoices):
        CNN = "cnn", "Convolutional network"
        GPT = "gpt", "GPT-2 style transformer"

    key = models.SlugField(max_length=40, unique=True, help_text="e.g. densenet121-2d, gpt2-xl")
    model = models.CharField(max_length=40, help_text="e.g. densenet121, gpt2-xl")
    dims = models.PositiveSmallIntegerField(help_text="1 for sequences, 2 slices, 3 volumes")
    family = models.CharField(max_length=3, choices=Family.choices)
    reference_size = models.PositiveIntegerField()
    parameters = models.BigIntegerField()
    train_flops_per_sample = models.FloatField(help_text="forward + backward, at reference size")
    activation_bytes_per_sample = models.FloatField(help_text="saved for backward, fp32")
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["model", "dims"]
        constraints = [
            models.UniqueConstraint(fields=["model", "dims"], name="workload_unique_model_dims"),
            models.CheckConstraint(condition=Q(dims__gte=1, dims__lte=3), name="workload_dims_1_3"),
        ]

    def __str__(self) -> str:
        return self.key


class BenchmarkResult(models.Model):
    """Training throughput (samples/s over all `gpus`, median of `repeats`) on one node type."""

    class Source(models.TextChoices):
        MEASURED = "measured", "Measured"
        PUBLISHED = "published", "Published"
        JOB = "job", "Measured by a job"  # a training job's own figures, written back

    node_type = models.ForeignKey(
        "allocations.NodeType", on_delete=models.CASCADE, related_name="benchmark_results"
    )
    workload = models.ForeignKey(Workload, on_delete=models.PROTECT, related_name="results")
    precision = models.CharField(max_length=4, choices=[(p, p) for p in PRECISIONS])
    strategy = models.CharField(
        max_length=10, choices=[(s, s) for s in STRATEGIES], default="single"
    )
    gpus = models.PositiveIntegerField(default=1)
    batch_size = models.PositiveIntegerField(help_text="per GPU")
    image_size = models.PositiveIntegerField(help_text="pixels per side, or tokens per sample")
    throughput = models.FloatField(help_text="samples/s over all GPUs, median of the repeats")
    throughput_min = models.FloatField(null=True, blank=True)
    throughput_max = models.FloatField(null=True, blank=True)
    repeats = models.PositiveIntegerField(default=1)
    peak_memory_gb = models.FloatField(
        null=True, blank=True, help_text="per GPU (CUDA) or process RSS (CPU)"
    )
    source = models.CharField(max_length=9, choices=Source.choices, default=Source.MEASURED)
    citation = models.TextField(
        blank=True,
        help_text="where a published figure comes from, or how and where it was measured",
    )
    software = models.JSONField(default=dict, blank=True)
    measured_at = models.DateTimeField(null=True, blank=True)
    submitted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    notes = models.TextField(blank=True)
    # Stable key of a catalogue entry or "job-<id>" for a job's result (seeding and job
    # write-back are idempotent on it); empty for API submissions.
    catalogue_key = models.CharField(max_length=80, blank=True)
    # For source "job": what the recommender predicted for that run at launch and what the run
    # took (wall hours of one run), the recommender's calibration on /benchmarks/.
    predicted_hours = models.FloatField(null=True, blank=True)
    measured_hours = models.FloatField(null=True, blank=True)
    # The run's wall time not spent in training steps: start-up, data, validation, evaluation.
    overhead_seconds = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = [
            "workload__model",
            "workload__dims",
            "node_type__name",
            "precision",
            "gpus",
            "-created_at",
        ]
        indexes = [
            # The recommender groups by chip and model; the list filters by these.
            models.Index(fields=["workload", "node_type"], name="bench_workload_node"),
            models.Index(fields=["node_type", "precision"], name="bench_node_precision"),
            models.Index(fields=["source", "-created_at"], name="bench_source_created"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["catalogue_key"],
                condition=~Q(catalogue_key=""),
                name="bench_unique_catalogue_key",
            ),
            models.CheckConstraint(condition=Q(throughput__gt=0), name="bench_throughput_pos"),
            models.CheckConstraint(condition=Q(gpus__gte=1), name="bench_gpus_pos"),
            models.CheckConstraint(
                condition=Q(throughput_min__isnull=True) | Q(throughput_min__lte=F("throughput")),
                name="bench_min_le_median",
            ),
            models.CheckConstraint(
                condition=Q(throughput_max__isnull=True) | Q(throughput_max__gte=F("throughput")),
                name="bench_max_ge_median",
            ),
        ]

    def __str__(self) -> str:
        return (
            f"{self.workload_id and self.workload.key} on {self.node_type.name}: "
            f"{self.throughput:g} samples/s ({self.precision}, {self.gpus} GPU)"
        )
