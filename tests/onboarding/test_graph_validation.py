"""A chart that has a cycle, a choice leading nowhere or an unreachable node is refused, and the
message names the node: in the pure rules, in the services, and in the admin."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from portal.onboarding import services
from portal.onboarding.graph import Edge, Graph, problems
from portal.onboarding.models import Choice, Flowchart, Question
from portal.onboarding.services import ChoiceSpec


def small_graph() -> Graph:
    return Graph(
        start="a",
        questions={"a": "Question A", "b": "Question B"},
        outcomes={"x": "Outcome X"},
        edges={"a": [Edge("a-yes", "Yes", "q:b")], "b": [Edge("b-yes", "Yes", "o:x")]},
    )


def test_a_sound_graph_has_no_problems():
    assert problems(small_graph()) == []


def test_a_cycle_is_named():
    graph = small_graph()
    graph.edges["b"].append(Edge("b-back", "Back", "q:a"))
    [message] = problems(graph)
    assert "cycle" in message and "Question A" in message and "Question B" in message


def test_a_choice_that_leads_nowhere_is_named():
    graph = small_graph()
    graph.edges["b"].append(Edge("b-no", "Not sure", None))
    assert problems(graph) == ["Choice “Not sure” of question “Question B” leads nowhere."]


def test_an_unreachable_node_is_named():
    graph = small_graph()
    graph.outcomes["y"] = "Orphan outcome"
    graph.questions["c"] = "Lonely question"
    graph.edges["c"] = [Edge("c-1", "One", "o:x")]
    found = problems(graph)
    assert "Outcome “Orphan outcome” cannot be reached from the start question." in found
    assert "Question “Lonely question” cannot be reached from the start question." in found


def test_the_seeded_chart_is_published_and_sound(chart):
    assert chart.status == Flowchart.Status.PUBLISHED
    services.flowchart_check(flowchart=chart)  # raises if broken


def test_an_edit_that_makes_a_cycle_is_refused_and_rolled_back(chart):
    with pytest.raises(ValidationError) as refused:
        services.question_save(
            flowchart=chart,
            key="v100",
            text="Are V100s sufficient?",
            choices=[
                ChoiceSpec("v100-yes", "Yes", "o:jade2-v100"),
                ChoiceSpec("v100-loop", "Start again", "q:cloud"),
            ],
        )
    assert "cycle" in refused.value.messages[0]
    assert "Do I need cloud?" in refused.value.messages[0]
    assert not Choice.objects.filter(key="v100-loop").exists()


def test_removing_the_only_way_to_a_node_is_refused_on_a_published_chart(chart):
    with pytest.raises(ValidationError) as refused:
        services.question_save(
            flowchart=chart,
            key="v100",
            text="Are V100s sufficient?",
            choices=[ChoiceSpec("v100-yes", "Yes", "o:jade2-v100")],
        )
    assert refused.value.messages == [
        "Outcome “Request time on Baskerville (A100 80 GB)” cannot be reached from the start "
        "question."
    ]
    assert Choice.objects.filter(key="v100-no").exists()


def test_a_draft_with_loose_ends_cannot_be_published(chart):
    draft = services.flowchart_copy(flowchart=chart)
    services.question_save(
        flowchart=draft,
        key="extra",
        text="Do I need root?",
        choices=[ChoiceSpec("root-yes", "Yes", "q:nothing-yet")],
    )
    with pytest.raises(ValidationError) as refused:
        services.flowchart_publish(flowchart=draft)
    assert "Choice “Yes” of question “Do I need root?” leads nowhere." in refused.value.messages
    assert (
        "Question “Do I need root?” cannot be reached from the start question."
        in refused.value.messages
    )
    chart.refresh_from_db()
    assert chart.status == Flowchart.Status.PUBLISHED


def test_publishing_a_sound_draft_archives_the_old_chart(chart):
    draft = services.flowchart_copy(flowchart=chart)
    services.flowchart_publish(flowchart=draft)
    chart.refresh_from_db()
    assert chart.status == Flowchart.Status.ARCHIVED
    assert Flowchart.objects.get(status="published") == draft


def _inline_post(question: Question, rows: list[dict]) -> dict:
    data = {
        "key": question.key,
        "text": question.text,
        "help_text": question.help_text,
        "order": question.order,
        "choices-TOTAL_FORMS": len(rows),
        "choices-INITIAL_FORMS": question.choices.count(),
        "choices-MIN_NUM_FORMS": 0,
        "choices-MAX_NUM_FORMS": 1000,
    }
    for i, row in enumerate(rows):
        for field, value in row.items():
            data[f"choices-{i}-{field}"] = value
        data[f"choices-{i}-question"] = question.pk
    return data


def _rows(question: Question, override: dict[str, dict]) -> list[dict]:
    return [
        {
            "id": c.pk,
            "order": c.order,
            "key": c.key,
            "label": c.label,
            "next_question": c.next_question_id or "",
            "outcome": c.outcome_id or "",
            "sets": "{}",
            **override.get(c.key, {}),
        }
        for c in question.choices.all()
    ]


def test_the_admin_refuses_a_cycle_naming_the_node(chart, client, admin):
    client.force_login(admin)
    question = chart.questions.get(key="v100")
    start = chart.questions.get(key="cloud")
    data = _inline_post(
        question, _rows(question, {"v100-no": {"outcome": "", "next_question": start.pk}})
    )
    response = client.post(f"/admin/onboarding/question/{question.pk}/change/", data)
    assert response.status_code == 200  # the form again, with the refusal
    page = response.content.decode()
    assert "The chart has a cycle" in page and "Do I need cloud?" in page
    assert question.choices.get(key="v100-no").next_question is None


def test_the_admin_refuses_a_dangling_choice_naming_it(chart, client, admin):
    client.force_login(admin)
    question = chart.questions.get(key="v100")
    data = _inline_post(question, _rows(question, {"v100-no": {"outcome": ""}}))
    response = client.post(f"/admin/onboarding/question/{question.pk}/change/", data)
    page = response.content.decode()
    assert "Choice “No, I need more” of question “Are V100s sufficient?” leads nowhere." in page
    assert question.choices.get(key="v100-no").outcome is not None


def test_the_admin_saves_a_sound_edit(chart, client, admin):
    client.force_login(admin)
    question = chart.questions.get(key="v100")
    data = _inline_post(question, _rows(question, {"v100-no": {"label": "No, A100s please"}}))
    response = client.post(f"/admin/onboarding/question/{question.pk}/change/", data)
    assert response.status_code == 302
    assert question.choices.get(key="v100-no").label == "No, A100s please"
