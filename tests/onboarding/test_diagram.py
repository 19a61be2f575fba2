"""The chart as drawn (portal/onboarding/diagram.py), without a browser: on wide screens every
label written whole, wrapped, and no answer's box on another's or on a node; on phones the
chart as numbered steps, each answer naming where it leads, with the visitor's path marked."""

from __future__ import annotations

import re

from portal.onboarding.diagram import render_svg, steps
from portal.onboarding.graph import Edge, Graph

LONG = "Special category (health, genetic, biometric or criminal offence data)"


def chart() -> Graph:
    """A chart where two answers lead to one question, and the labels are long."""
    return Graph(
        start="cloud",
        questions={
            "cloud": "Do I need cloud?",
            "data": "How sensitive is the data that this project will keep on the system?",
            "books": "Am I using notebooks?",
        },
        outcomes={
            "trial": "Get an Azure trial credit",
            "tre": "Use a Trusted Research Environment on Azure",
            "bask": "Request time on Baskerville",
            "jade": "Request time on JADE2",
        },
        edges={
            "cloud": [
                Edge("yes", "The project or programme pays for cloud", "o:trial"),
                Edge("no", "No", "q:data"),
            ],
            "data": [
                Edge("public", "Public, non-sensitive", "q:books"),
                Edge("internal", "Internal to the organisation", "q:books"),
                Edge("special", LONG, "o:tre"),
            ],
            "books": [Edge("yes", "Yes", "o:bask"), Edge("no", "No, batch jobs", "o:jade")],
        },
    )


def _boxes(svg: str, group: str) -> list[tuple[float, float, float, float]]:
    """(x0, y0, x1, y1) of each rect in the `<g class="{group} ...">` groups."""
    found = []
    pattern = rf'<g class="{group}[^"]*"[^>]*>(?:<title>[^<]*</title>)?<rect x="([-\d.]+)" y="([-\d.]+)" width="([\d.]+)" height="([\d.]+)"'
    for x, y, w, h in re.findall(pattern, svg):
        found.append((float(x), float(y), float(x) + float(w), float(y) + float(h)))
    return found


def _overlap(a, b) -> bool:
    return min(a[2], b[2]) > max(a[0], b[0]) and min(a[3], b[3]) > max(a[1], b[1])


def test_every_label_is_written_whole_and_wrapped():
    svg = render_svg(chart(), on_path=set(), current=None, taken=set(), description="d")
    assert "…" not in svg and "..." not in svg.replace("(health, genetic, ...)", "")
    labels = [
        " ".join(re.findall(r"<tspan[^>]*>([^<]*)</tspan>", text))
        for text in re.findall(r'<g class="edge-label[^"]*".*?</g>', svg)
    ]
    assert sorted(label.replace("- ", "-") for label in labels) == sorted(
        e.label for edges in chart().edges.values() for e in edges
    )
    # The long answer takes several lines; so does the long question.
    assert len(re.findall(r"<tspan", next(t for t in svg.split("</g>") if "Special" in t))) >= 3
    question = next(t for t in svg.split("</g>") if 'data-node="q:data"' in t)
    assert "How sensitive is the data that this project will keep on the system?" == " ".join(
        re.findall(r"<tspan[^>]*>([^<]*)</tspan>", question)
    )


def test_no_answer_sits_on_another_or_on_a_node():
    svg = render_svg(chart(), on_path=set(), current=None, taken=set(), description="d")
    answers, nodes = _boxes(svg, "edge-label"), _boxes(svg, "node")
    assert len(answers) == 7 and len(nodes) == 7
    boxes = answers + nodes
    assert [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1 :] if _overlap(a, b)] == []
    # Two answers lead to "Am I using notebooks?": side by side above it, not stacked.
    public, internal = (
        answers[i]
        for i, t in enumerate(re.findall(r'<g class="edge-label[^"]*" data-edge="([^"]+)"', svg))
        if t in ("data:public", "data:internal")
    )
    assert public[2] <= internal[0] and public[3] == internal[3]


def test_the_path_is_highlighted_on_the_svg():
    svg = render_svg(
        chart(),
        on_path={"q:cloud", "q:data"},
        current="q:data",
        taken={"cloud:no"},
        description="d",
    )
    assert '<g class="node question on-path current" data-node="q:data">' in svg
    assert '<path class="edge on-path" data-edge="cloud:no"' in svg
    assert '<g class="edge-label on-path" data-edge="cloud:no">' in svg
    assert '<path class="edge" data-edge="cloud:yes"' in svg


def test_a_phone_gets_numbered_steps_with_where_each_answer_leads():
    found = steps(chart(), on_path={"q:cloud", "q:data"}, current="q:data", taken={"cloud:no"})
    assert [(s.number, s.ref) for s in found] == [(1, "q:cloud"), (2, "q:data"), (3, "q:books")]
    cloud, data, books = found
    assert (
        cloud.classes == "node question on-path" and data.classes == "node question on-path current"
    )
    assert books.classes == "node question"
    yes, no = cloud.answers
    assert (yes.label, yes.target_name, yes.target_number) == (
        "The project or programme pays for cloud",
        "Get an Azure trial credit",
        None,
    )
    assert (no.classes, no.target_number, no.target_name) == ("edge on-path", 2, data.text)
    assert yes.classes == "edge" and yes.target_classes == "node outcome"
    assert [(a.label, a.target_number) for a in data.answers] == [
        ("Public, non-sensitive", 3),
        ("Internal to the organisation", 3),
        (LONG, None),
    ]


def test_the_outcome_reached_is_the_current_step_on_a_phone():
    found = steps(
        chart(),
        on_path={"q:cloud", "q:data", "q:books", "o:jade"},
        current="o:jade",
        taken={"cloud:no", "data:internal", "books:no"},
    )
    jade = found[2].answers[1]
    assert jade.classes == "edge on-path" and jade.target_classes == "node outcome on-path current"
