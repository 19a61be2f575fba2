"""Reads for the onboarding flow: the published chart, walking a path through it, the data a
front end needs, and the drop-off analytics. Everything here is public information except
`funnel`, which callers show to staff only."""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlencode

from django.db.models import Count, Prefetch
from django.urls import reverse

from .graph import Edge, Graph, oref, qref
from .models import Choice, Flowchart, Outcome, Question

PATH_SEPARATOR = ","


def published_flowchart() -> Flowchart | None:
    return Flowchart.objects.filter(status=Flowchart.Status.PUBLISHED).first()


@dataclass
class Chart:
    """A chart loaded in a bounded number of queries (4), indexed by key."""

    flowchart: Flowchart
    questions: dict[str, Question]
    outcomes: dict[str, Outcome]
    graph: Graph

    @property
    def start(self) -> Question | None:
        return self.questions.get(self.graph.start or "")


def _target_ref(
    choice: Choice, question_keys: dict[int | None, str], outcome_keys: dict[int | None, str]
) -> str | None:
    if choice.next_question_id in question_keys:
        return qref(question_keys[choice.next_question_id])
    if choice.outcome_id in outcome_keys:
        return oref(outcome_keys[choice.outcome_id])
    return None


def chart_load(flowchart: Flowchart) -> Chart:
    questions = list(
        flowchart.questions.prefetch_related(
            Prefetch("choices", queryset=Choice.objects.order_by("order", "pk"))
        )
    )
    outcomes = list(flowchart.outcomes.select_related("facility", "node_type"))
    # Keyed so that a None start, next question or outcome finds nothing.
    qkeys: dict[int | None, str] = {q.pk: q.key for q in questions}
    okeys: dict[int | None, str] = {o.pk: o.key for o in outcomes}
    graph = Graph(
        start=qkeys.get(flowchart.start_question_id),
        questions={q.key: q.text for q in questions},
        outcomes={o.key: o.title for o in outcomes},
        edges={
            q.key: [Edge(c.key, c.label, _target_ref(c, qkeys, okeys)) for c in q.choices.all()]
            for q in questions
        },
    )
    return Chart(flowchart, {q.key: q for q in questions}, {o.key: o for o in outcomes}, graph)


def flowchart_graph(flowchart: Flowchart) -> Graph:
    return chart_load(flowchart).graph


@dataclass
class Position:
    """Where a path of choice keys leads. `steps` are the (question, choice) pairs taken; the walk
    stands at `question` or has ended at `outcome`. `facts` merges what the answers told."""

    steps: list[tuple[Question, Choice]] = field(default_factory=list)
    question: Question | None = None
    outcome: Outcome | None = None
    facts: dict[str, str] = field(default_factory=dict)
    ignored: list[str] = field(default_factory=list)  # path segments that did not fit

    @property
    def path(self) -> list[str]:
        return [choice.key for _, choice in self.steps]

    @property
    def path_param(self) -> str:
        return PATH_SEPARATOR.join(self.path)

    @property
    def node_ref(self) -> str | None:
        if self.outcome:
            return oref(self.outcome.key)
        return qref(self.question.key) if self.question else None

    @property
    def handover(self) -> bool:
        """Whether a 'which GPU system?' question was asked or is being asked."""
        asked = [q for q, _ in self.steps] + ([self.question] if self.question else [])
        return any(q.recommender_handover for q in asked)


def parse_path(raw: str) -> list[str]:
    return [
        part.strip()
        for part in (raw or "").replace("/", PATH_SEPARATOR).split(PATH_SEPARATOR)
        if part.strip()
    ][:50]


def walk_resolve(chart: Chart, path: list[str]) -> Position:
    """Follow `path` (choice keys) from the start question. Segments that do not match a choice
    of the question reached are ignored from there on (old bookmarks never fail)."""
    position = Position(question=chart.start)
    # Keyed so that a None next_question_id or outcome_id finds nothing.
    by_pk: dict[int | None, Question] = {q.pk: q for q in chart.questions.values()}
    outcomes: dict[int | None, Outcome] = {o.pk: o for o in chart.outcomes.values()}
    for index, key in enumerate(path):
        current = position.question
        choice = next((c for c in current.choices.all() if c.key == key), None) if current else None
        if choice is None or current is None:  # no question, no choice
            position.ignored = path[index:]
            break
        position.steps.append((current, choice))
        position.facts.update({str(k): str(v) for k, v in (choice.sets or {}).items()})
        position.question = by_pk.get(choice.next_question_id)
        position.outcome = outcomes.get(choice.outcome_id)
    return position


def request_url(
    outcome: Outcome, facts: dict[str, str] | None = None, kind: str | None = None
) -> str:
    """The request form pre-filled for this outcome and what the user told us (`kind`
    overrides the outcome's request kind)."""
    params = {"facility": outcome.facility.slug}
    if outcome.node_type is not None:  # no query when node_type_id is None
        params["node_type"] = outcome.node_type.name
    params["kind"] = kind or outcome.request_kind
    if outcome.gpu_hours:
        params["gpu_hours"] = str(outcome.gpu_hours)
    facts = facts or {}
    if facts.get("data_sensitivity"):
        params["data_sensitivity"] = facts["data_sensitivity"]
    return f"{reverse('request-new')}?{urlencode(params)}"


def recommender_url(facts: dict[str, str]) -> str:
    params = {k: facts[k] for k in ("data_sensitivity", "needs") if facts.get(k)}
    return "/recommend/" + (f"?{urlencode(params)}" if params else "")


def walk_url(path: list[str]) -> str:
    base = reverse("onboarding")
    return f"{base}?{urlencode({'path': PATH_SEPARATOR.join(path)}, safe=',')}" if path else base


def _target(choice: Choice, chart: Chart) -> dict:
    for q in chart.questions.values():
        if q.pk == choice.next_question_id:
            return {"type": "question", "key": q.key}
    for o in chart.outcomes.values():
        if o.pk == choice.outcome_id:
            return {"type": "outcome", "key": o.key}
    return {"type": None, "key": None}


def flow_payload(chart: Chart, *, absolute=lambda url: url) -> dict:
    """The whole chart as plain data (the API and the page's embedded JSON). Request URLs carry
    facility, node type and kind; a client adds each answer's `sets` (data_sensitivity)."""
    chart_row = chart.flowchart
    return {
        "name": chart_row.name,
        "version": chart_row.version,
        "published_at": chart_row.published_at.isoformat() if chart_row.published_at else None,
        "start": chart.graph.start,
        "questions": [
            {
                "key": q.key,
                "text": q.text,
                "help_text": q.help_text,
                "recommender_handover": q.recommender_handover,
                "choices": [
                    {
                        "key": c.key,
                        "label": c.label,
                        "sets": c.sets or {},
                        "next": _target(c, chart),
                    }
                    for c in q.choices.all()
                ],
            }
            for q in chart.questions.values()
        ],
        "outcomes": [
            {
                "key": o.key,
                "title": o.title,
                "facility": o.facility.slug,
                "facility_name": o.facility.name,
                "facility_kind": o.facility.kind,
                "node_type": o.node_type.name if o.node_type is not None else None,
                "kind": o.request_kind,
                "track": o.track,
                "gpu_hours": o.gpu_hours,
                "explanation": o.explanation,
                "request_url": absolute(request_url(o)),
            }
            for o in chart.outcomes.values()
        ],
        "recommender_url": absolute("/recommend/"),
    }


@dataclass
class FunnelRow:
    ref: str
    label: str
    reached: int
    left_here: int


def funnel(flowchart: Flowchart) -> dict:
    """Per question: walks that reached it and walks that stopped there (drop-off); per outcome:
    walks that reached it. Two aggregate queries whatever the traffic. Staff only."""
    questions = Question.objects.filter(flowchart=flowchart).annotate(
        reached=Count("visits__walk", distinct=True),
        left_here=Count("current_walks", distinct=True),
    )
    outcomes = Outcome.objects.filter(flowchart=flowchart).annotate(
        reached=Count("visits__walk", distinct=True), standing=Count("current_walks", distinct=True)
    )
    total = flowchart.walks.count()
    return {
        "walks": total,
        "questions": [FunnelRow(qref(q.key), q.text, q.reached, q.left_here) for q in questions],
        "outcomes": [FunnelRow(oref(o.key), o.title, o.reached, 0) for o in outcomes],
        "completed": flowchart.walks.filter(current_outcome__isnull=False).count(),
    }
