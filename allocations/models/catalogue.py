"""The catalogue: facilities (with their policy) and the node types they offer."""
from __future__ import annotations

from decimal import Decimal

from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models


class Sensitivity(models.TextChoices):
    PUBLIC = "public", "Public, non-sensitive"
    INTERNAL = "internal", "Internal"
    PERSONAL = "personal", "Personal data"
    SPECIAL = "special", "Special category (health, genetic, ...)"


def _default_tiers() -> list[str]:
    return [Sensitivity.PUBLIC, Sensitivity.INTERNAL]


class Facility(models.Model):
    class Kind(models.TextChoices):
        HPC = "hpc", "HPC"
        CLOUD = "cloud", "Cloud"
        LOCAL = "local", "Local"

    class Backend(models.TextChoices):
        SLURM = "slurm", "Slurm over SSH"
        AWS = "aws", "AWS (boto3)"
        LOCAL = "local", "Local processes"
        # No API to drive: research computing staff set it up and mark it active in the admin.
        MANUAL = "manual", "Manual (staff set it up)"

    slug = models.SlugField(unique=True)
    name = models.CharField(max_length=120)
    kind = models.CharField(max_length=10, choices=Kind.choices)
    backend = models.CharField(max_length=10, choices=Backend.choices, default=Backend.LOCAL)
    # Backend connection facts (host, port, user, key_path, host_key | region, zones, bucket,
    # image, idle times, ...). Secrets are never stored here: key_path names a file.
    backend_settings = models.JSONField(default=dict, blank=True)
    description = models.TextField(blank=True)
    documentation_url = models.URLField(blank=True)
    # Policy.
    trial_gpu_hours_cap = models.PositiveIntegerField(default=400)
    trial_days = models.PositiveIntegerField(default=90, validators=[MinValueValidator(1)])
    trial_auto_approve = models.BooleanField(default=False)
    # Per person (as requester or PI, across all their projects): beyond these a trial is
    # not approved automatically but waits for a reviewer (allocations/policy.py, `trial_limit_reason`).
    trial_open_per_person = models.PositiveIntegerField(
        "open trials per person", default=1, validators=[MinValueValidator(1)])
    trial_per_person_per_period = models.PositiveIntegerField(
        "trials per person per period", default=2, validators=[MinValueValidator(1)])
    trial_period_days = models.PositiveIntegerField(
        "trial period (days)", default=365, validators=[MinValueValidator(1)])
    # The most GPU-hours one full request may ask for here (a national Tier-2 call grants up
    # to about 100,000); beyond it the request is refused on `gpu_hours`, never mailed out.
    full_gpu_hours_max = models.PositiveIntegerField(
        "largest full request (GPU-hours)", default=100_000, validators=[MinValueValidator(1)])
    latest_end_date = models.DateField(null=True, blank=True)
    allowed_sensitivity = models.JSONField(default=_default_tiers)
    gpu_hour_rate = models.DecimalField(
        "charge per GPU-hour", max_digits=8, decimal_places=4, default=Decimal("0")
    )
    offers_notebooks = models.BooleanField(default=False)
    # A notebook session idle this long (no activity the hub saw) is stopped by the portal.
    notebook_idle_minutes = models.PositiveIntegerField(default=30, validators=[MinValueValidator(1)])
    offers_root = models.BooleanField(default=False)
    offers_public_web = models.BooleanField(default=False)
    is_active = models.BooleanField(default=True)

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "facilities"

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        unknown = set(self.allowed_sensitivity or []) - set(Sensitivity.values)
        if unknown or not self.allowed_sensitivity:
            raise ValidationError(
                {"allowed_sensitivity": f"Choose from {', '.join(Sensitivity.values)}."}
            )

    def accepts(self, tier: str) -> bool:
        return tier in (self.allowed_sensitivity or [])


class NodeType(models.Model):
    facility = models.ForeignKey(Facility, on_delete=models.CASCADE, related_name="node_types")
    name = models.CharField(max_length=60)
    accelerator = models.CharField(max_length=60, blank=True)
    accelerator_memory_gb = models.DecimalField(max_digits=7, decimal_places=1, default=0)
    accelerators_per_node = models.PositiveIntegerField(default=1)
    cpu_cores = models.PositiveIntegerField(default=0)
    memory_gb = models.PositiveIntegerField(default=0)
    interconnect = models.CharField(max_length=60, blank=True)
    peak_tflops_fp16 = models.FloatField(null=True, blank=True)
    peak_tflops_bf16 = models.FloatField(null=True, blank=True)
    peak_tflops_fp32 = models.FloatField(null=True, blank=True)
    peak_tflops_fp64 = models.FloatField(null=True, blank=True)
    peak_tflops_tf32 = models.FloatField(null=True, blank=True)
    # "gpu" or "cpu": the recommender never calibrates accelerators on CPU results.
    device = models.CharField(max_length=3, choices=[("gpu", "GPU"), ("cpu", "CPU")],
                              default="gpu")
    # The most accelerators one job may use here (e.g. 1 on a workstation); empty = no limit.
    max_accelerators = models.PositiveIntegerField(null=True, blank=True)
    launch_date = models.DateField(null=True, blank=True)
    instance_type = models.CharField(max_length=40, blank=True)
    price_on_demand = models.DecimalField(max_digits=9, decimal_places=4, null=True, blank=True)
    price_spot = models.DecimalField(max_digits=9, decimal_places=4, null=True, blank=True)

    class Meta:
        ordering = ["facility__name", "name"]
        constraints = [
            models.UniqueConstraint(fields=["facility", "name"], name="nodetype_unique_per_facility")
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.accelerator})" if self.accelerator else self.name
