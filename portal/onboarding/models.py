"""The onboarding flowchart as data (questions, choices, outcomes, in versioned charts) and the
anonymous walk records behind the drop-off analytics.

A chart is a directed acyclic graph: every choice leads to exactly one question or outcome of the
same chart. The whole-graph rules (no cycle, no dangling choice, nothing unreachable) are checked
by `graph.problems`, called from the services and the admin; the database only enforces what
one row can know.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from allocations.models import Facility, NodeType


class Flowchart(models.Model):
    """One version of the chart. Exactly one is published at a time; drafts are edited freely and
    validated when published."""

    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        PUBLISHED = "published", "Published"
        ARCHIVED = "archived", "Archived"

    name = models.CharField(max_length=120)
    version = models.PositiveIntegerField(default=1)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DRAFT)
    start_question = models.ForeignKey(
        "Question",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text="The first question asked. It must belong to this chart.",
    )
    published_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-version"]
        constraints = [
            models.UniqueConstraint(
                fields=["status"],
                condition=Q(status="published"),
                name="onboarding_one_published_chart",
            ),
            models.UniqueConstraint(fields=["name", "version"], name="onboarding_chart_version"),
        ]

    def __str__(self) -> str:
        return f"{self.name} v{self.version} ({self.get_status_display().lower()})"


class Question(models.Model):
    flowchart = models.ForeignKey(Flowchart, on_delete=models.CASCADE, related_name="questions")
    key = models.SlugField(max_length=40, help_text="Short name used in links, e.g. `cloud`.")
    text = models.CharField(max_length=200)
    help_text = models.TextField(blank=True)
    order = models.PositiveIntegerField(default=0, help_text="Position in the text outline.")
    recommender_handover = models.BooleanField(
        default=False,
        help_text="A 'which GPU system?' question: offer the benchmark "
        "recommender beside it and after it.",
    )

    class Meta:
        ordering = ["flowchart", "order", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["flowchart", "key"], name="onboarding_question_key")
        ]

    def __str__(self) -> str:
        return self.text


class Outcome(models.Model):
    """Where a path ends: a facility (and node type), and the kind of request to make."""

    class Track(models.TextChoices):
        TRIAL = "trial", "Trial access"
        FULL = "full", "Full request"
        TRIAL_CREDIT = "trial_credit", "Cloud trial credit"
        BRIEF = "brief", "Brief cloud request (project-funded)"

    # The request kind each track files; cloud tracks are labels on the same two kinds.
    REQUEST_KIND: dict[str, str] = {
        Track.TRIAL: "trial",
        Track.TRIAL_CREDIT: "trial",
        Track.FULL: "full",
        Track.BRIEF: "full",
    }
    CLOUD_ONLY = (Track.TRIAL_CREDIT, Track.BRIEF)

    flowchart = models.ForeignKey(Flowchart, on_delete=models.CASCADE, related_name="outcomes")
    key = models.SlugField(max_length=40)
    title = models.CharField(max_length=200)
    facility = models.ForeignKey(Facility, on_delete=models.PROTECT, related_name="+")
    node_type = models.ForeignKey(
        NodeType, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    track = models.CharField(max_length=20, choices=Track.choices, default=Track.TRIAL)
    gpu_hours = models.PositiveIntegerField(
        null=True, blank=True, help_text="Suggested GPU-hours to pre-fill."
    )
    explanation = models.TextField(help_text="Why this is the recommendation (plain text).")

    class Meta:
        ordering = ["flowchart", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["flowchart", "key"], name="onboarding_outcome_key")
        ]

    def __str__(self) -> str:
        return self.title

    @property
    def request_kind(self) -> str:
        return self.REQUEST_KIND[self.track]

    def clean(self) -> None:
        if (
            self.node_type_id
            and self.facility_id
            and self.node_type is not None
            and self.node_type.facility_id != self.facility_id
        ):
            raise ValidationError({"node_type": "This node type belongs to another facility."})
        if self.track in self.CLOUD_ONLY and self.facility_id and self.facility.kind != "cloud":
            raise ValidationError(
                {"track": "Trial credits and brief requests are for cloud facilities."}
            )


class Choice(models.Model):
    """One answer to a question. It leads to exactly one next question or outcome; `sets` carries
    what the answer tells us (e.g. {"data_sensitivity": "special"}) into the request form and the
    recommender."""

    question = models.ForeignKey(Question, on_delete=models.CASCADE, related_name="choices")
    key = models.SlugField(max_length=40, help_text="Unique within the question, used in links.")
    label = models.CharField(max_length=200)
    order = models.PositiveIntegerField(default=0)
    next_question = models.ForeignKey(
        Question, on_delete=models.PROTECT, null=True, blank=True, related_name="incoming"
    )
    outcome = models.ForeignKey(
        Outcome, on_delete=models.PROTECT, null=True, blank=True, related_name="incoming"
    )
    sets = models.JSONField(
        default=dict,
        blank=True,
        help_text='Facts this answer gives, e.g. {"data_sensitivity": '
        '"special"} or {"needs": "notebooks"}.',
    )

    class Meta:
        ordering = ["question", "order", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["question", "key"], name="onboarding_choice_key"),
            models.CheckConstraint(
                condition=~(Q(next_question__isnull=False) & Q(outcome__isnull=False)),
                name="onboarding_choice_one_target",
            ),
        ]

    def __str__(self) -> str:
        return self.label


class Walk(models.Model):
    """One visitor's walk through one chart, for analytics only. `token` is a random value kept
    in the visitor's session: no user, IP address or user agent is stored."""

    flowchart = models.ForeignKey(Flowchart, on_delete=models.CASCADE, related_name="walks")
    token = models.CharField(max_length=64)
    current_question = models.ForeignKey(
        Question, on_delete=models.SET_NULL, null=True, related_name="current_walks"
    )
    current_outcome = models.ForeignKey(
        Outcome, on_delete=models.SET_NULL, null=True, related_name="current_walks"
    )
    started_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["flowchart", "token"], name="onboarding_walk_token")
        ]


class WalkVisit(models.Model):
    """A node a walk reached (once per walk and node)."""

    walk = models.ForeignKey(Walk, on_delete=models.CASCADE, related_name="visits")
    question = models.ForeignKey(
        Question, on_delete=models.CASCADE, null=True, related_name="visits"
    )
    outcome = models.ForeignKey(Outcome, on_delete=models.CASCADE, null=True, related_name="visits")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["walk", "question"], name="onboarding_visit_question"),
            models.UniqueConstraint(fields=["walk", "outcome"], name="onboarding_visit_outcome"),
            models.CheckConstraint(
                condition=Q(question__isnull=True) ^ Q(outcome__isnull=True),
                name="onboarding_visit_one_node",
            ),
        ]
