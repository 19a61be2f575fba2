"""The chart drawn as an inline SVG on the server: a layered top-down layout (`graph.layers`),
no JavaScript library and nothing fetched from elsewhere. Nodes and edges carry `data-node` /
`data-edge` attributes so the page's script can move the highlight without redrawing."""

from __future__ import annotations

import textwrap

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from .graph import Graph, layers, qref

NODE_W, NODE_H, GAP_X, GAP_Y, PAD = 186, 58, 20, 72, 16
CHARS_PER_LINE = 24


def _label(text: str, x: float, y: float, lines_max: int = 3) -> str:
    lines = textwrap.wrap(text, CHARS_PER_LINE)[:lines_max] or [""]
    first = y - (len(lines) - 1) * 8
    spans = "".join(
        f'<tspan x="{x:.0f}" y="{first + i * 16:.0f}">{escape(line)}</tspan>'
        for i, line in enumerate(lines)
    )
    return f'<text text-anchor="middle" dominant-baseline="middle">{spans}</text>'


# The phone layout: one node per row, edges as arcs on the right, nested by how far they go.
V_GAP, V_ARCS, V_STEP = 22, 150, 9


def render_svg(
    graph: Graph,
    *,
    on_path: set[str],
    current: str | None,
    taken: set[str],
    description: str,
    vertical: bool = False,
) -> SafeString:
    """SVG markup for `graph`. `on_path` holds node refs visited, `taken` edge ids
    (`<question key>:<choice key>`) followed, `current` the node the visitor stands at.
    `vertical`: the narrow layout for phones (one column, about 360 px wide at scale 1)."""
    rows = layers(graph)
    centre: dict[str, tuple[float, float]] = {}
    if vertical:
        order = [ref for row in rows for ref in row]
        width, height = NODE_W + V_ARCS + 2 * PAD, len(order) * (NODE_H + V_GAP) - V_GAP + 2 * PAD
        for index, ref in enumerate(order):
            centre[ref] = (PAD + NODE_W / 2, PAD + index * (NODE_H + V_GAP) + NODE_H / 2)
        edges, labels = _vertical_edges(graph, centre, taken, order)
        return _svg(
            graph, centre, edges, labels, width, height, on_path, current, description, prefix="v-"
        )
    width = max((len(r) for r in rows), default=1) * (NODE_W + GAP_X) - GAP_X + 2 * PAD
    height = len(rows) * (NODE_H + GAP_Y) - GAP_Y + 2 * PAD
    for depth, row in enumerate(rows):
        row_w = len(row) * (NODE_W + GAP_X) - GAP_X
        for index, ref in enumerate(row):
            x = (width - row_w) / 2 + index * (NODE_W + GAP_X) + NODE_W / 2
            centre[ref] = (x, PAD + depth * (NODE_H + GAP_Y) + NODE_H / 2)
    edges, labels = [], []
    # Edges into the same node get their labels stacked, not drawn on top of each other.
    into: dict[str, list[str]] = {}
    for qkey, choices in graph.edges.items():
        for edge in choices:
            into.setdefault(edge.target or "", []).append(f"{qkey}:{edge.key}")
    for qkey, choices in graph.edges.items():
        source = qref(qkey)
        for edge in choices:
            if source not in centre or edge.target not in centre:
                continue
            (x1, y1), (x2, y2) = centre[source], centre[edge.target]
            y1, y2 = y1 + NODE_H / 2, y2 - NODE_H / 2
            mid = (y1 + y2) / 2
            edge_id = f"{qkey}:{edge.key}"
            cls = "edge on-path" if edge_id in taken else "edge"
            edges.append(
                f'<path class="{cls}" data-edge="{escape(edge_id)}" '
                f'd="M{x1:.0f},{y1:.0f} C{x1:.0f},{mid:.0f} {x2:.0f},{mid:.0f} '
                f'{x2:.0f},{y2:.0f}" marker-end="url(#arrow)"/>'
            )
            siblings = into[edge.target or ""]
            shift = (siblings.index(edge_id) - (len(siblings) - 1) / 2) * 22
            lx, ly = x1 + (x2 - x1) * 0.55 + shift * 2.5, y1 + (y2 - y1) * 0.55 + shift
            text = edge.label if len(edge.label) <= 18 else edge.label[:17] + "…"
            w = 7 * len(text) + 10
            labels.append(
                f'<g class="{cls.replace("edge", "edge-label")}" '
                f'data-edge="{escape(edge_id)}"><rect x="{lx - w / 2:.0f}" '
                f'y="{ly - 10:.0f}" width="{w}" height="20" rx="4"/>'
                f'<text x="{lx:.0f}" y="{ly:.0f}" text-anchor="middle" '
                f'dominant-baseline="middle">{escape(text)}</text></g>'
            )
    return _svg(graph, centre, edges, labels, width, height, on_path, current, description)


def _vertical_edges(
    graph: Graph, centre: dict[str, tuple[float, float]], taken: set[str], order: list[str]
) -> tuple[list[str], list[str]]:
    """Arcs from each question's right edge to its targets', wider the further they go, with
    the answer written at the arc's far side."""
    edges, labels = [], []
    right = PAD + NODE_W
    for qkey, choices in graph.edges.items():
        source = qref(qkey)
        for n, edge in enumerate(choices):
            if source not in centre or edge.target not in centre:
                continue
            (_, y1), (_, y2) = centre[source], centre[edge.target]
            y1, y2 = y1 + (n - (len(choices) - 1) / 2) * 10, y2 + 8
            reach = min(
                V_ARCS - 60, 14 + V_STEP * abs(order.index(edge.target) - order.index(source))
            )
            edge_id = f"{qkey}:{edge.key}"
            cls = "edge on-path" if edge_id in taken else "edge"
            edges.append(
                f'<path class="{cls}" data-edge="{escape(edge_id)}" '
                f'd="M{right:.0f},{y1:.0f} C{right + reach:.0f},{y1:.0f} '
                f'{right + reach:.0f},{y2:.0f} {right + 2:.0f},{y2:.0f}" '
                f'marker-end="url(#v-arrow)"/>'
            )
            text = edge.label if len(edge.label) <= 12 else edge.label[:11] + "…"
            lx, ly = right + reach * 0.75 + 4, (y1 + y2) / 2
            labels.append(
                f'<g class="{cls.replace("edge", "edge-label")}" '
                f'data-edge="{escape(edge_id)}"><text x="{lx:.0f}" y="{ly:.0f}" '
                f'dominant-baseline="middle">{escape(text)}</text></g>'
            )
    return edges, labels


def _svg(
    graph: Graph,
    centre: dict[str, tuple[float, float]],
    edges: list[str],
    labels: list[str],
    width: float,
    height: float,
    on_path: set[str],
    current: str | None,
    description: str,
    prefix: str = "",
) -> SafeString:
    nodes = []
    for ref, (x, y) in centre.items():
        kind = "question" if ref.startswith("q:") else "outcome"
        classes = (
            ["node", kind]
            + (["on-path"] if ref in on_path else [])
            + (["current"] if ref == current else [])
        )
        name = graph.questions.get(ref[2:]) if kind == "question" else graph.outcomes.get(ref[2:])
        radius = 24 if kind == "question" else 6
        nodes.append(
            f'<g class="{" ".join(classes)}" data-node="{escape(ref)}">'
            f"<title>{escape(name or '')}</title>"
            f'<rect x="{x - NODE_W / 2:.0f}" y="{y - NODE_H / 2:.0f}" width="{NODE_W}" '
            f'height="{NODE_H}" rx="{radius}"/>{_label(name or "", x, y)}</g>'
        )
    cls = "flow-diagram flow-vertical" if prefix else "flow-diagram flow-wide"
    return mark_safe(  # nosec B308 B703 # every interpolated text above went through escape()
        f'<svg class="{cls}" xmlns="http://www.w3.org/2000/svg" role="img" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" '
        f'aria-labelledby="{prefix}diagram-title {prefix}diagram-desc">'
        f'<title id="{prefix}diagram-title">The whole onboarding chart</title>'
        f'<desc id="{prefix}diagram-desc">{escape(description)}</desc>'
        f'<defs><marker id="{prefix}arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="10" '
        f'markerHeight="10" markerUnits="userSpaceOnUse" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z"/></marker>'
        f'</defs><g class="edges">{"".join(edges)}</g><g class="labels">{"".join(labels)}</g>'
        f'<g class="nodes">{"".join(nodes)}</g></svg>'
    )
