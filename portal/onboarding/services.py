"""Writes for the onboarding flow: editing and publishing chart versions, and recording walks.

Every edit re-checks the whole graph inside its transaction and raises `Invalid` (which
rolls the edit back) when the result breaks a rule. A published chart must always pass every
rule; a draft may be incomplete while it is being built, but never contain a cycle.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from allocations.models import Facility, NodeType
from core.errors import NON_FIELD, Invalid, clean_or_invalid

from .graph import problems
from .models import Choice, Flowchart, Outcome, Question, Walk, WalkVisit
from .selectors import Position, flowchart_graph


@dataclass
class ChoiceSpec:
    key: str
    label: str
    leads_to: str  # "q:<question key>" or "o:<outcome key>"
    sets: dict = field(default_factory=dict)


def flowchart_check(*, flowchart: Flowchart) -> None:
    """Raise `Invalid` listing every broken rule (each naming its node). A published
    chart gets every rule; a draft only the no-cycle rule."""
    found = problems(
        flowchart_graph(flowchart), cycles_only=flowchart.status != Flowchart.Status.PUBLISHED
    )
    if found:
        raise Invalid({NON_FIELD: found})


@transaction.atomic
def flowchart_create(*, name: str) -> Flowchart:
    """A new, empty draft: version one more than the highest of that name."""
    top = Flowchart.objects.filter(name=name).aggregate(v=Max("version"))["v"] or 0
    return Flowchart.objects.create(name=name, version=top + 1)


@transaction.atomic
def flowchart_publish(*, flowchart: Flowchart) -> Flowchart:
    """Make this draft the chart visitors walk; the previous published one is archived.
    Refused, with every problem named, unless the whole graph passes."""
    found = problems(flowchart_graph(flowchart))
    if found:
        raise Invalid({NON_FIELD: found})
    Flowchart.objects.filter(status=Flowchart.Status.PUBLISHED).exclude(pk=flowchart.pk).update(
        status=Flowchart.Status.ARCHIVED
    )
    updated = Flowchart.objects.filter(pk=flowchart.pk, status=Flowchart.Status.DRAFT).update(
        status=Flowchart.Status.PUBLISHED, published_at=timezone.now()
    )
    if updated != 1:
        raise Invalid(f"{flowchart} is not a draft, so it cannot be published.", field=NON_FIELD)
    flowchart.refresh_from_db()
    return flowchart


@transaction.atomic
def flowchart_copy(*, flowchart: Flowchart) -> Flowchart:
    """A new draft with the same questions, choices and outcomes, to edit and publish later."""
    draft = flowchart_create(name=flowchart.name)
    # Keyed so that a None next question, outcome or start finds nothing.
    qmap: dict[int | None, Question] = {}
    omap: dict[int | None, Outcome] = {}
    for q in flowchart.questions.all():
        qmap[q.pk] = Question.objects.create(
            flowchart=draft,
            key=q.key,
            text=q.text,
            help_text=q.help_text,
            order=q.order,
            recommender_handover=q.recommender_handover,
        )
    for o in flowchart.outcomes.all():
        omap[o.pk] = Outcome.objects.create(
            flowchart=draft,
            key=o.key,
            title=o.title,
            facility_id=o.facility_id,
            node_type_id=o.node_type_id,
            track=o.track,
            gpu_hours=o.gpu_hours,
            explanation=o.explanation,
        )
    Choice.objects.bulk_create(
        Choice(
            question=qmap[c.question_id],
            key=c.key,
            label=c.label,
            order=c.order,
            sets=c.sets,
            next_question=qmap.get(c.next_question_id),
            outcome=omap.get(c.outcome_id),
        )
        for c in Choice.objects.filter(question__flowchart=flowchart)
    )
    draft.start_question = qmap.get(flowchart.start_question_id)
    draft.save(update_fields=["start_question"])
    return draft


@transaction.atomic
def flowchart_set_start(*, flowchart: Flowchart, question: Question) -> None:
    if question.flowchart_id != flowchart.pk:
        raise Invalid(f"Question “{question}” belongs to another chart.", field=NON_FIELD)
    flowchart.start_question = question
    flowchart.save(update_fields=["start_question"])
    flowchart_check(flowchart=flowchart)


def _resolve(flowchart: Flowchart, ref: str) -> dict:
    kind, _, key = ref.partition(":")
    if kind == "q":
        return {"next_question": flowchart.questions.filter(key=key).first(), "outcome": None}
    if kind == "o":
        return {"next_question": None, "outcome": flowchart.outcomes.filter(key=key).first()}
    raise Invalid(f"“{ref}” is not a node reference (q:<key> or o:<key>).", field=NON_FIELD)


@transaction.atomic
def question_save(
    *,
    flowchart: Flowchart,
    key: str,
    text: str,
    choices: list[ChoiceSpec],
    help_text: str = "",
    order: int = 0,
    recommender_handover: bool = False,
) -> Question:
    """Create or replace the question `key` and its choices (matched by key), then check the
    whole chart. A choice leading to a node that does not exist (yet) is stored as leading
    nowhere, which only a draft accepts."""
    question, _ = Question.objects.update_or_create(
        flowchart=flowchart,
        key=key,
        defaults={
            "text": text,
            "help_text": help_text,
            "order": order,
            "recommender_handover": recommender_handover,
        },
    )
    question.choices.exclude(key__in=[c.key for c in choices]).delete()
    for index, spec in enumerate(choices):
        Choice.objects.update_or_create(
            question=question,
            key=spec.key,
            defaults={
                "label": spec.label,
                "order": index,
                "sets": spec.sets,
                **_resolve(flowchart, spec.leads_to),
            },
        )
    flowchart_check(flowchart=flowchart)
    return question


@transaction.atomic
def outcome_save(
    *,
    flowchart: Flowchart,
    key: str,
    title: str,
    facility: Facility,
    explanation: str,
    track: str = Outcome.Track.TRIAL,
    node_type: NodeType | None = None,
    gpu_hours: int | None = None,
) -> Outcome:
    """Create or update the outcome `key`; refused if the node type is another facility's or a
    cloud-only track is given to an HPC facility, or if the chart would break a rule."""
    outcome = Outcome.objects.filter(flowchart=flowchart, key=key).first() or Outcome(
        flowchart=flowchart, key=key
    )
    outcome.title, outcome.facility, outcome.node_type = title, facility, node_type
    outcome.explanation, outcome.track, outcome.gpu_hours = explanation, track, gpu_hours
    clean_or_invalid(outcome)
    outcome.save()
    flowchart_check(flowchart=flowchart)
    return outcome


def walk_record(*, flowchart: Flowchart, token: str, position: Position) -> Walk | None:
    """Note that the walk `token` stands at `position`, and every node on the way as reached.
    Idempotent: reaching a node twice counts once. Stores no personal data: the token is random
    and lives only in the visitor's session."""
    if not token or position.node_ref is None:
        return None
    try:
        walk, _ = Walk.objects.get_or_create(flowchart=flowchart, token=token[:64])
    except IntegrityError:  # two tabs started the same walk at once
        walk = Walk.objects.get(flowchart=flowchart, token=token[:64])
    visits = [WalkVisit(walk=walk, question=q) for q, _ in position.steps]
    visits.append(WalkVisit(walk=walk, question=position.question, outcome=position.outcome))
    WalkVisit.objects.bulk_create(visits, ignore_conflicts=True)
    Walk.objects.filter(pk=walk.pk).update(
        current_question=position.question,
        current_outcome=position.outcome,
        updated_at=timezone.now(),
    )
    return walk
