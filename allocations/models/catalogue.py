"""The catalogue: facilities (with their policy) and the node types they offer."""

from __future__ import annotations

from decimal import Decimal
from functools import cached_property

from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models

from ..backend_names import DEFAULT_BACKEND, facility_backend_choices
from ..units import Unit, unit_of


class Sensitivity(models.TextChoices):
    PUBLIC = "public", "Public, non-sensitive"
    INTERNAL = "internal", "Internal"
    PERSONAL = "personal", "Personal data"
    SPECIAL = "special", "Special category (health, genetic, ...)"


def _default_tiers() -> list[str]:
    return [Sensitivity.PUBLIC, Sensitivity.INTERNAL]


#: The usage alerts a facility sends unless it says otherwise: percent of the granted GPU-hours.
DEFAULT_ALERT_THRESHOLDS = (50, 80, 95, 100)


def default_alert_thresholds() -> list[int]:
    return list(DEFAULT_ALERT_THRESHOLDS)


def alert_thresholds_problem(value: object) -> str:
    """Why `value` is not a list of alert thresholds (whole percents from 1 to 100, strictly
    ascending, at least one), or "" when it is one. The one rule, for the model's validator and
    for `Facility.thresholds` (which ignores a stored list that breaks it)."""
    if not isinstance(value, list) or not value:
        return "Give at least one threshold, as a list of whole percents, e.g. [50, 80, 95, 100]."
    if any(isinstance(t, bool) or not isinstance(t, int) or not 1 <= t <= 100 for t in value):
        return "Each threshold is a whole percent from 1 to 100."
    if any(a >= b for a, b in zip(value, value[1:])):
        return "List the thresholds in ascending order, each once."
    return ""


def validate_alert_thresholds(value: object) -> None:
    problem = alert_thresholds_problem(value)
    if problem:
        raise ValidationError(problem)


class Facility(models.Model):
    class Kind(models.TextChoices):
        HPC = "hpc", "HPC"
        CLOUD = "cloud", "Cloud"
        LOCAL = "local", "Local"

    slug = models.SlugField(unique=True)
    name = models.CharField(max_length=120)
    kind = models.CharField(max_length=10, choices=Kind.choices)
    # One of the registered compute backends (launcher/backends/registry.py: local, slurm, aws,
    # manual, ...): the choices are the registry's, so a new backend needs no migration.
    backend = models.CharField(
        max_length=32, choices=facility_backend_choices, default=DEFAULT_BACKEND
    )
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
        "open trials per person", default=1, validators=[MinValueValidator(1)]
    )
    trial_per_person_per_period = models.PositiveIntegerField(
        "trials per person per period", default=2, validators=[MinValueValidator(1)]
    )
    trial_period_days = models.PositiveIntegerField(
        "trial period (days)", default=365, validators=[MinValueValidator(1)]
    )
    # The most GPU-hours one full request may ask for here (a national Tier-2 call grants up
    # to about 100,000); beyond it the request is refused on `gpu_hours`, never mailed out.
    full_gpu_hours_max = models.PositiveIntegerField(
        "largest full request (GPU-hours)", default=100_000, validators=[MinValueValidator(1)]
    )
    latest_end_date = models.DateField(null=True, blank=True)
    allowed_sensitivity = models.JSONField(default=_default_tiers)
    gpu_hour_rate = models.DecimalField(
        "charge per GPU-hour", max_digits=8, decimal_places=4, default=Decimal("0")
    )
    offers_notebooks = models.BooleanField(default=False)
    # A notebook session idle this long (no activity the hub saw) is stopped by the portal.
    notebook_idle_minutes = models.PositiveIntegerField(
        default=30, validators=[MinValueValidator(1)]
    )
    # Percent of the granted GPU-hours at which the project's PI and members are alerted, once
    # each per grant (allocations/services/usage.py); a top-up alerts afresh.
    alert_thresholds = models.JSONField(
        "usage alert thresholds (%)",
        default=default_alert_thresholds,
        validators=[validate_alert_thresholds],
        help_text="Whole percents, ascending, e.g. [50, 80, 95, 100].",
    )
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

    @property
    def thresholds(self) -> tuple[int, ...]:
        """The alert thresholds in force: the stored list, or the defaults when a stored list
        breaks the rule (written around the validators)."""
        stored = self.alert_thresholds
        return tuple(stored) if not alert_thresholds_problem(stored) else DEFAULT_ALERT_THRESHOLDS

    def accepts(self, tier: str) -> bool:
        return tier in (self.allowed_sensitivity or [])

    @cached_property
    def unit(self) -> Unit:
        """What its hours are counted in: GPU-hours, or CPU-hours where every node type is a
        CPU one (allocations/units.py). Reads the node types (prefetched, or one query)."""
        return unit_of(self.node_types.all())


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
    device = models.CharField(max_length=3, choices=[("gpu", "GPU"), ("cpu", "CPU")], default="gpu")
    # The most accelerators one job may use here (e.g. 1 on a workstation); empty = no limit.
    max_accelerators = models.PositiveIntegerField(null=True, blank=True)
    launch_date = models.DateField(null=True, blank=True)
    instance_type = models.CharField(max_length=40, blank=True)
    price_on_demand = models.DecimalField(max_digits=9, decimal_places=4, null=True, blank=True)
    price_spot = models.DecimalField(max_digits=9, decimal_places=4, null=True, blank=True)

    class Meta:
        ordering = ["facility__name", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["facility", "name"], name="nodetype_unique_per_facility"
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.accelerator})" if self.accelerator else self.name

    @property
    def unit(self) -> Unit:
        """GPU, or CPU for a CPU node type (allocations/units.py)."""
        return unit_of([self])
