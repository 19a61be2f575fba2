"""A project's registered datasets: the only data a job may name (besides synthetic sets)."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models

from .catalogue import Sensitivity
from .project import Project

dataset_name_validator = RegexValidator(
    r"^[A-Za-z][A-Za-z0-9._-]{0,79}$",
    "Start with a letter; then letters, digits, dots, dashes and underscores (at most 80).",
)
sha256_validator = RegexValidator(r"^[0-9a-f]{64}$", "64 lower-case hexadecimal digits.")


class Dataset(models.Model):
    """Data of one project, at `location` under the project's folder in a facility's project
    storage root (`<storage_root>/<project code>/<location>`, see docs/security.md). The
    location is relative and is resolved and confined on the side that sees the files at
    every launch (launcher/datasets.py)."""

    class Modality(models.TextChoices):
        XRAY = "xray", "X-ray"
        CT = "ct", "CT"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="datasets")
    name = models.CharField(max_length=80, validators=[dataset_name_validator])
    location = models.CharField(max_length=250)
    modality = models.CharField(max_length=4, choices=Modality.choices)
    sensitivity = models.CharField("data sensitivity", max_length=10, choices=Sensitivity.choices)
    sha256 = models.CharField(
        "SHA-256 checksum", max_length=64, blank=True, validators=[sha256_validator]
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["project", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "name"], name="dataset_name_unique_per_project"
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.project.code})" if self.project_id else self.name
