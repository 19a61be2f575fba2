"""The chart drawn for the page, with no JavaScript library and nothing fetched from elsewhere.

- Wide screens: an inline SVG in a layered top-down layout (`graph.layers`). Every label is
  wrapped, never cut: a node grows to the lines of its text, and each answer is written whole
  just above the node it leads to, in a band of its own between the layers, so no answer can
  sit on another or on an edge that is not its own.
- Phones: the same chart as a numbered list of steps (`steps`), one question after another with
  its answers and where each leads, in HTML that wraps to any width.

Nodes and answers carry `data-node` / `data-edge` attributes in both, so the page's script can
move the highlight without redrawing."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from .graph import Graph, layers, qref

NODE_W, GAP_X, PAD = 186, 20, 16
NODE_LINE_H, NODE_CHARS, NODE_MIN_H = 16, 24, 58
# Answers: 11.5 px text, 5.2 to 7.8 px a character in chromium's sans-serif (6 on average);
# a line is 14 px.
LABEL_LINE_H, LABEL_CHAR_W, LABEL_PAD = 14, 6.4, 5
CURVE_H, ARROW_H = 40, 16  # room for the curves above a band; for the arrow below a label


def _lines(text: str, chars: int) -> list[str]:
    """`text` in lines of at most `chars` characters, broken between words; a word longer than
    a line is split with a hyphen."""
    chars = max(chars, 4)
    lines = []
    for line in textwrap.wrap(text, chars, break_long_words=False) or [""]:
        while len(line) > chars:
            lines.append(line[: chars - 1] + "-")
            line = line[chars - 1 :]
        lines.append(line)
    return lines


def _node_label(lines: list[str], x: float, y: float) -> str:
    first = y - (len(lines) - 1) * NODE_LINE_H / 2
    spans = "".join(
        f'<tspan x="{x:.0f}" y="{first + i * NODE_LINE_H:.0f}">{escape(line)}</tspan>'
        for i, line in enumerate(lines)
    )
    return f'<text text-anchor="middle" dominant-baseline="middle">{spans}</text>'


@dataclass(frozen=True)
class _Answer:
    edge_id: str
    source: str
    target: str
    lines: list[str]
    x: float  # where it reaches its target (the middle of its share of the target's width)
    width: float  # that share


def _answers(graph: Graph, x_of: dict[str, float]) -> list[_Answer]:
    """Each answer with the share of its target's top edge it arrives at: a node that several
    answers lead to is split between them, ordered by where they come from, so that their
    labels stand side by side and their edges do not cross."""
    into: dict[str, list[tuple[str, str, str]]] = {}
    for qkey, choices in graph.edges.items():
        source = qref(qkey)
        for edge in choices:
            if source in x_of and edge.target in x_of:
                into.setdefault(edge.target, []).append((source, f"{qkey}:{edge.key}", edge.label))
    found = []
    for target, edges in into.items():
        edges.sort(key=lambda e: x_of[e[0]])
        share = NODE_W / len(edges)
        left = x_of[target] - NODE_W / 2
        for index, (source, edge_id, label) in enumerate(edges):
            chars = int((share - 2 * LABEL_PAD - 4) / LABEL_CHAR_W)
            found.append(
                _Answer(
                    edge_id,
                    source,
                    target,
                    _lines(label, chars),
                    left + share * (index + 0.5),
                    share,
                )
            )
    return found


def render_svg(
    graph: Graph, *, on_path: set[str], current: str | None, taken: set[str], description: str
) -> SafeString:
    """SVG markup for `graph`. `on_path` holds node refs visited, `taken` edge ids
    (`<question key>:<choice key>`) followed, `current` the node the visitor stands at."""
    rows = layers(graph)
    names = {ref: _name(graph, ref) for row in rows for ref in row}
    node_lines = {ref: _lines(name, NODE_CHARS) for ref, name in names.items()}
    node_h = max([NODE_MIN_H] + [len(v) * NODE_LINE_H + 26 for v in node_lines.values()])
    width = max((len(r) for r in rows), default=1) * (NODE_W + GAP_X) - GAP_X + 2 * PAD
    x_of: dict[str, float] = {}
    depth_of: dict[str, int] = {}
    for depth, row in enumerate(rows):
        row_w = len(row) * (NODE_W + GAP_X) - GAP_X
        for index, ref in enumerate(row):
            x_of[ref] = (width - row_w) / 2 + index * (NODE_W + GAP_X) + NODE_W / 2
            depth_of[ref] = depth
    answers = _answers(graph, x_of)
    # Each layer's band holds the tallest answer written above one of its nodes.
    band = [0.0] * len(rows)
    for a in answers:
        tall = len(a.lines) * LABEL_LINE_H + 2 * LABEL_PAD
        band[depth_of[a.target]] = max(band[depth_of[a.target]], tall)
    top: list[float] = []
    for depth in range(len(rows)):
        previous = top[-1] + node_h if top else PAD - CURVE_H - ARROW_H
        top.append(previous + CURVE_H + band[depth] + ARROW_H)
    height = (top[-1] + node_h + PAD) if top else 2 * PAD
    centre = {ref: (x_of[ref], top[depth_of[ref]] + node_h / 2) for ref in x_of}
    edges, labels = [], []
    for a in answers:
        x1, y1 = x_of[a.source], top[depth_of[a.source]] + node_h
        y2 = top[depth_of[a.target]]
        band_top = y2 - ARROW_H - band[depth_of[a.target]]
        mid = (y1 + band_top) / 2
        cls = "edge on-path" if a.edge_id in taken else "edge"
        # A curve down to the top of the band, then straight down through its own label.
        edges.append(
            f'<path class="{cls}" data-edge="{escape(a.edge_id)}" '
            f'd="M{x1:.0f},{y1:.0f} C{x1:.0f},{mid:.0f} {a.x:.0f},{mid:.0f} '
            f'{a.x:.0f},{band_top:.0f} L{a.x:.0f},{y2:.0f}" marker-end="url(#arrow)"/>'
        )
        box_h = len(a.lines) * LABEL_LINE_H + 2 * LABEL_PAD
        longest = max(len(line) for line in a.lines)
        box_w = min(a.width - 4, longest * LABEL_CHAR_W * 1.1 + 2 * LABEL_PAD)  # capitals are wider
        box_top = y2 - ARROW_H - box_h
        spans = "".join(
            f'<tspan x="{a.x:.0f}" y="{box_top + LABEL_PAD + (i + 0.5) * LABEL_LINE_H:.0f}">'
            f"{escape(line)}</tspan>"
            for i, line in enumerate(a.lines)
        )
        labels.append(
            f'<g class="{cls.replace("edge", "edge-label")}" data-edge="{escape(a.edge_id)}">'
            f'<rect x="{a.x - box_w / 2:.0f}" y="{box_top:.0f}" width="{box_w:.0f}" '
            f'height="{box_h:.0f}" rx="4"/>'
            f'<text text-anchor="middle" dominant-baseline="middle">{spans}</text></g>'
        )
    nodes = []
    for ref, (x, y) in centre.items():
        kind = "question" if ref.startswith("q:") else "outcome"
        classes = (
            ["node", kind]
            + (["on-path"] if ref in on_path else [])
            + (["current"] if ref == current else [])
        )
        nodes.append(
            f'<g class="{" ".join(classes)}" data-node="{escape(ref)}">'
            f"<title>{escape(names[ref])}</title>"
            f'<rect x="{x - NODE_W / 2:.0f}" y="{y - node_h / 2:.0f}" width="{NODE_W}" '
            f'height="{node_h:.0f}" rx="{24 if kind == "question" else 6}"/>'
            f"{_node_label(node_lines[ref], x, y)}</g>"
        )
    return mark_safe(  # nosec B308 B703 # every interpolated text above went through escape()
        f'<svg class="flow-diagram flow-wide" xmlns="http://www.w3.org/2000/svg" role="img" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" aria-labelledby="diagram-title diagram-desc">'
        f'<title id="diagram-title">The whole onboarding chart</title>'
        f'<desc id="diagram-desc">{escape(description)}</desc>'
        f'<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="10" '
        f'markerHeight="10" markerUnits="userSpaceOnUse" orient="auto-start-reverse">'
        f'<path d="M0,0 L10,5 L0,10 z"/></marker></defs>'
        f'<g class="edges">{"".join(edges)}</g><g class="labels">{"".join(labels)}</g>'
        f'<g class="nodes">{"".join(nodes)}</g></svg>'
    )


def _name(graph: Graph, ref: str) -> str:
    kind, key = ref.split(":", 1)
    return (graph.questions if kind == "q" else graph.outcomes).get(key) or ""


@dataclass(frozen=True)
class StepAnswer:
    """One answer of a step: where it leads, and whether the visitor took it."""

    edge: str  # `<question key>:<choice key>`, as on the SVG
    label: str
    target: str  # node reference
    target_name: str
    target_number: int | None  # the question's number in the list; None for an outcome
    classes: str  # of the answer ("edge", "on-path")
    target_classes: str  # of an outcome it leads to ("node outcome", "on-path", "current")


@dataclass(frozen=True)
class Step:
    """One question of the phone layout, numbered in the order the chart asks them."""

    number: int
    ref: str
    text: str
    classes: str  # "node question", "on-path", "current"
    answers: list[StepAnswer]


def steps(graph: Graph, *, on_path: set[str], current: str | None, taken: set[str]) -> list[Step]:
    """The chart as numbered steps for a narrow screen: every reachable question in the
    layered order of the wide diagram, each with its answers and where each leads."""
    order = [ref for row in layers(graph) for ref in row if ref.startswith("q:")]
    number = {ref: index + 1 for index, ref in enumerate(order)}

    def classes(ref: str, kind: str) -> str:
        return " ".join(
            ["node", kind]
            + (["on-path"] if ref in on_path else [])
            + (["current"] if ref == current else [])
        )

    found = []
    for ref in order:
        answers = []
        for edge in graph.edges.get(ref[2:], []):
            target = edge.target or ""
            if not target or not graph.exists(target):
                continue
            edge_id = f"{ref[2:]}:{edge.key}"
            answers.append(
                StepAnswer(
                    edge=edge_id,
                    label=edge.label,
                    target=target,
                    target_name=_name(graph, target),
                    target_number=number.get(target),
                    classes="edge on-path" if edge_id in taken else "edge",
                    target_classes=classes(target, "outcome"),
                )
            )
        found.append(Step(number[ref], ref, _name(graph, ref), classes(ref, "question"), answers))
    return found
