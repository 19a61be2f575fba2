"""The knowledge base: the System-Tooling Matrix (tools x systems) and Markdown walkthroughs.

`Walkthrough.body_html` is derived: `services.walkthrough_save` renders the Markdown and runs it
through the sanitiser, so the stored HTML is always safe to show. `SearchTerm` rows are a small
inverted index of each walkthrough (indexed, portable to SQLite and PostgreSQL).
"""

from __future__ import annotations

from django.db import models

from allocations.models import Facility


class System(models.Model):
    """A matrix column: a system as researchers name it, linked to the catalogue's facility."""

    name = models.CharField(max_length=60, unique=True)
    facility = models.OneToOneField(
        Facility, on_delete=models.SET_NULL, null=True, blank=True, related_name="knowledge_system"
    )
    order = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["order", "name"]

    def __str__(self) -> str:
        return self.name


class Tool(models.Model):
    """A matrix row: a framework, library or launcher."""

    name = models.CharField(max_length=60, unique=True)
    url = models.URLField(blank=True)
    order = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["order", "name"]

    def __str__(self) -> str:
        return self.name


class Support(models.Model):
    """One matrix cell. A missing cell means "not yet known"."""

    class Status(models.TextChoices):
        YES = "yes", "Works (walkthrough or tested)"
        NO = "no", "Not available"
        UNKNOWN = "unknown", "Not yet tested"

    tool = models.ForeignKey(Tool, on_delete=models.CASCADE, related_name="support")
    system = models.ForeignKey(System, on_delete=models.CASCADE, related_name="support")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.UNKNOWN)
    note = models.CharField(max_length=200, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tool", "system"], name="knowledge_one_cell")
        ]

    def __str__(self) -> str:
        return f"{self.tool} on {self.system}: {self.status}"


class Walkthrough(models.Model):
    title = models.CharField(max_length=200)
    slug = models.SlugField(unique=True)
    summary = models.CharField(max_length=300, blank=True)
    facility = models.ForeignKey(
        Facility,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="walkthroughs",
        help_text="The system this walkthrough is about, if one.",
    )
    body_markdown = models.TextField("body (Markdown)")
    body_html = models.TextField(editable=False, blank=True)
    is_published = models.BooleanField(default=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["title"]

    def __str__(self) -> str:
        return self.title


class SearchTerm(models.Model):
    """A word of a walkthrough with its weight (title words count more)."""

    walkthrough = models.ForeignKey(
        Walkthrough, on_delete=models.CASCADE, related_name="search_terms"
    )
    term = models.CharField(max_length=40, db_index=True)
    weight = models.PositiveIntegerField(default=1)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["walkthrough", "term"], name="knowledge_term_once")
        ]
