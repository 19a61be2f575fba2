"""Projects and their members."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models

from ..usernames import CLUSTER_USERNAME_HELP, CLUSTER_USERNAME_PATTERN

project_code_validator = RegexValidator(
    r"^[A-Z0-9][A-Z0-9-]{2,31}$", "Use 3-32 capital letters, digits and dashes, e.g. ABC-DEF-001."
)


class Project(models.Model):
    code = models.CharField(max_length=32, unique=True, validators=[project_code_validator])
    title = models.CharField(max_length=200)
    research_area = models.CharField(max_length=120)
    pi = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="led_projects"
    )
    pi_name = models.CharField("PI / supervisor name", max_length=120)
    pi_email = models.EmailField("PI / supervisor email")
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, through="ProjectMembership", related_name="projects"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["code"]

    def __str__(self) -> str:
        return f"{self.code}: {self.title}"


class ProjectMembership(models.Model):
    class Role(models.TextChoices):
        PI = "pi", "PI"
        MANAGER = "manager", "Manager"
        MEMBER = "member", "Member"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)
    # The member's login name on HPC facilities (added to the Slurm account on activation).
    cluster_username = models.CharField(
        max_length=32,
        blank=True,
        validators=[RegexValidator(CLUSTER_USERNAME_PATTERN, CLUSTER_USERNAME_HELP)],
    )
    # Why the member's association could not be mirrored to a backend account (e.g. a login
    # no scheduler accepts), set by the account sync and cleared when it next succeeds; the
    # staff home lists these members.
    sync_error = models.CharField(max_length=300, blank=True)
    added_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "user"], name="membership_unique")
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.project.code} ({self.role})"

    @property
    def can_manage(self) -> bool:
        return self.role in {self.Role.PI, self.Role.MANAGER}
