"""A sweep: a grid of training runs (models x learning rates x LR steps x weight decays x
folds), one Job per cell, submitted as one Slurm job array on Slurm facilities."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class Sweep(models.Model):
    allocation = models.ForeignKey(
        "allocations.Allocation", on_delete=models.PROTECT, related_name="sweeps"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="launched_sweeps"
    )
    name = models.CharField(max_length=120, blank=True)
    # The validated grid spec (launcher.sweepgrid.validate input, preset expanded).
    grid = models.JSONField(default=dict)
    # Parameters shared by every cell (dataset, size, ...), as for a single job.
    params = models.JSONField(default=dict, blank=True)
    size = models.PositiveIntegerField()
    gpus = models.PositiveSmallIntegerField(default=1)
    wall_time_minutes = models.PositiveIntegerField(default=60)
    concurrency = models.PositiveIntegerField(default=4)
    token = models.CharField(max_length=64, unique=True)
    scheduler_id = models.CharField(max_length=64, blank=True)
    estimate_gpu_hours = models.DecimalField(max_digits=12, decimal_places=3, default=0)
    estimate_cost = models.DecimalField(max_digits=12, decimal_places=4, default=0)
    sort_by = models.CharField(max_length=20, default="accuracy")
    # A staged sweep (early stopping or a random/TPE search: launcher/services/sweeps.py)
    # releases cells as slots free up, each reserving the per-cell worst case below; `expected`
    # is the rung schedule's expected case. `schedule` holds the rungs' recorded values and the
    # decisions (launcher/search/asha.py), `releases` numbers the released batches.
    staged = models.BooleanField(default=False)
    cell_estimate_gpu_hours = models.DecimalField(max_digits=12, decimal_places=3, default=0)
    cell_estimate_cost = models.DecimalField(max_digits=12, decimal_places=4, default=0)
    expected_gpu_hours = models.DecimalField(max_digits=12, decimal_places=3, null=True, blank=True)
    schedule = models.JSONField(default=dict, blank=True)
    releases = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"Sweep #{self.pk} ({self.size} cells)"
