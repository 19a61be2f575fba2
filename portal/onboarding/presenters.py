"""What the walk page shows, assembled from selectors: breadcrumbs, the outcome cards with the
facility's key facts, the text outline of the chart. A bounded number of queries per page."""

from __future__ import annotations

from dataclasses import dataclass, field

from allocations.models import NodeType
from portal.knowledge.selectors import tooling_by_facility, walkthroughs_by_facility

from .models import Outcome
from .selectors import Chart, Position, request_url, walk_url


@dataclass
class Crumb:
    question: str
    answer: str
    url: str  # the walk up to (not including) this answer: to change it
    path: str


def breadcrumbs(position: Position) -> list[Crumb]:
    path = position.path
    return [
        Crumb(q.text, c.label, walk_url(path[:i]), ",".join(path[:i]))
        for i, (q, c) in enumerate(position.steps)
    ]


@dataclass
class OutcomeCard:
    outcome: Outcome
    request_url: str
    alternative_kind: str | None
    alternative_url: str | None
    node_types: list[NodeType] = field(default_factory=list)
    tooling: list = field(default_factory=list)
    walkthroughs: list = field(default_factory=list)


def outcome_cards(chart: Chart, position: Position) -> list[OutcomeCard]:
    outcomes = list(chart.outcomes.values())
    facility_ids = sorted({o.facility_id for o in outcomes})
    nodes: dict[int, list[NodeType]] = {fid: [] for fid in facility_ids}
    for node in NodeType.objects.filter(facility_id__in=facility_ids).order_by("name"):
        nodes[node.facility_id].append(node)
    tooling = tooling_by_facility(facility_ids)
    pages = walkthroughs_by_facility(facility_ids)
    cards = []
    for outcome in outcomes:
        alternative = {"trial": "full", "full": "trial"}.get(outcome.track)
        alt_url = request_url(outcome, position.facts, kind=alternative) if alternative else None
        cards.append(
            OutcomeCard(
                outcome,
                request_url(outcome, position.facts),
                alternative,
                alt_url,
                nodes[outcome.facility_id],
                tooling[outcome.facility_id],
                pages[outcome.facility_id],
            )
        )
    return cards


def outline(chart: Chart) -> list[dict]:
    """The chart as text (the diagram's text alternative): each question with where each answer
    leads."""
    items = []
    for question in chart.questions.values():
        answers = []
        for choice in question.choices.all():
            target = next(
                (q.text for q in chart.questions.values() if q.pk == choice.next_question_id), None
            ) or next(
                (
                    f"Recommendation: {o.title}"
                    for o in chart.outcomes.values()
                    if o.pk == choice.outcome_id
                ),
                "nowhere",
            )
            answers.append({"label": choice.label, "target": target})
        items.append(
            {"text": question.text, "start": question.key == chart.graph.start, "answers": answers}
        )
    return items


def path_description(chart: Chart, position: Position) -> str:
    total = f"{len(chart.questions)} questions and {len(chart.outcomes)} recommendations"
    if not position.steps:
        return f"A flowchart of {total}. You are at the first question."
    answered = "; ".join(f"{q.text} {c.label}" for q, c in position.steps)
    where = (
        f"the recommendation “{position.outcome.title}”"
        if position.outcome
        else f"the question “{position.question.text}”"
        if position.question
        else "the start"
    )
    return f"A flowchart of {total}. Your answers so far: {answered}. You are at {where}."
