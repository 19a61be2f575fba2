"""The chart as a plain graph, and the whole-graph rules. No database here: the services build
a `Graph` from the rows, the admin builds one from the rows plus the edits on its form, and both
ask `problems()` whether the result may be saved.

Node references are strings: `q:<key>` for a question, `o:<key>` for an outcome.
"""

from __future__ import annotations

from dataclasses import dataclass, field


def qref(key: str) -> str:
    return f"q:{key}"


def oref(key: str) -> str:
    return f"o:{key}"


@dataclass
class Edge:
    key: str
    label: str
    target: str | None  # a node reference, or None for a choice that leads nowhere


@dataclass
class Graph:
    start: str | None = None  # question key
    questions: dict[str, str] = field(default_factory=dict)  # key -> text
    outcomes: dict[str, str] = field(default_factory=dict)  # key -> title
    edges: dict[str, list[Edge]] = field(default_factory=dict)  # question key -> its choices

    def name(self, ref: str) -> str:
        kind, key = ref.split(":", 1)
        if kind == "q":
            return f"question “{self.questions.get(key, key)}”"
        return f"outcome “{self.outcomes.get(key, key)}”"

    def successors(self, ref: str) -> list[str]:
        if not ref.startswith("q:"):
            return []
        return [e.target for e in self.edges.get(ref[2:], []) if e.target and self.exists(e.target)]

    def exists(self, ref: str) -> bool:
        kind, key = ref.split(":", 1)
        return key in (self.questions if kind == "q" else self.outcomes)

    def with_node(
        self, kind: str, old_key: str | None, key: str, label: str, edges: list[Edge] | None = None
    ) -> Graph:
        """A copy with one question ("q", given its choices) or outcome ("o") added, renamed or
        changed: what saving an edit would make of the chart."""
        rename = {f"{kind}:{old_key}": f"{kind}:{key}"} if old_key else {}
        copy = Graph(
            start=self.start,
            questions=dict(self.questions),
            outcomes=dict(self.outcomes),
            edges={
                k: [Edge(e.key, e.label, rename.get(e.target or "", e.target)) for e in v]
                for k, v in self.edges.items()
            },
        )
        nodes = copy.questions if kind == "q" else copy.outcomes
        if old_key:
            nodes.pop(old_key, None)
        nodes[key] = label
        if kind == "q":
            copy.edges[key] = edges or []
            if old_key and old_key != key:
                copy.edges.pop(old_key, None)
                copy.start = key if copy.start == old_key else copy.start
        return copy

    def nodes(self) -> list[str]:
        return [qref(k) for k in self.questions] + [oref(k) for k in self.outcomes]


def _upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def _find_cycle(graph: Graph) -> list[str] | None:
    """A cycle as a list of refs (first == last), or None. Iterative DFS, white/grey/black."""
    colour: dict[str, int] = {}
    for root in graph.nodes():
        if colour.get(root):
            continue
        stack: list[tuple[str, int]] = [(root, 0)]
        trail: list[str] = [root]
        colour[root] = 1
        while stack:
            node, index = stack[-1]
            succ = graph.successors(node)
            if index < len(succ):
                stack[-1] = (node, index + 1)
                nxt = succ[index]
                if colour.get(nxt) == 1:
                    return trail[trail.index(nxt) :] + [nxt]
                if not colour.get(nxt):
                    colour[nxt] = 1
                    stack.append((nxt, 0))
                    trail.append(nxt)
            else:
                colour[node] = 2
                stack.pop()
                trail.pop()
    return None


def reachable(graph: Graph) -> set[str]:
    if not graph.start or graph.start not in graph.questions:
        return set()
    seen, todo = {qref(graph.start)}, [qref(graph.start)]
    while todo:
        for nxt in graph.successors(todo.pop()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def problems(graph: Graph, *, cycles_only: bool = False) -> list[str]:
    """Everything that makes the graph unusable, each message naming the node. Empty means the
    chart can be walked from its start question to an outcome along every path.

    `cycles_only` checks just the rule that no draft may break either (a loop never ends)."""
    found: list[str] = []
    cycle = _find_cycle(graph)
    if cycle:
        found.append(
            f"The chart has a cycle: {graph.name(cycle[0])} leads back to itself "
            f"({' → '.join(graph.name(r) for r in cycle)})."
        )
    if cycles_only:
        return found
    if not graph.start:
        found.append("The chart has no start question.")
    elif graph.start not in graph.questions:
        found.append(f"The start question “{graph.start}” is not part of this chart.")
    for key in graph.questions:
        choices = graph.edges.get(key, [])
        if not choices:
            found.append(f"{_upper_first(graph.name(qref(key)))} has no choices: it leads nowhere.")
        for edge in choices:
            if edge.target is None or not graph.exists(edge.target):
                found.append(f"Choice “{edge.label}” of {graph.name(qref(key))} leads nowhere.")
    seen = reachable(graph)
    if graph.start in graph.questions:
        for ref in graph.nodes():
            if ref not in seen:
                found.append(
                    f"{_upper_first(graph.name(ref))} cannot be reached from the start question."
                )
    return found


def layers(graph: Graph) -> list[list[str]]:
    """Reachable nodes in layers by longest distance from the start (the graph is acyclic), each
    layer ordered by the mean position of its parents so that edges cross less."""
    seen = reachable(graph)
    depth: dict[str, int] = {}
    order = _topological(graph, seen)
    for ref in order:
        depth.setdefault(ref, 0)
        for nxt in graph.successors(ref):
            depth[nxt] = max(depth.get(nxt, 0), depth[ref] + 1)
    result: list[list[str]] = [[] for _ in range(max(depth.values(), default=-1) + 1)]
    position: dict[str, float] = {}
    parents: dict[str, list[str]] = {}
    for ref in order:
        for nxt in graph.successors(ref):
            parents.setdefault(nxt, []).append(ref)
    for ref in order:
        result[depth[ref]].append(ref)
    for index, layer in enumerate(result):
        if index:
            layer.sort(key=lambda r: sum(position[p] for p in parents[r]) / len(parents[r]))
        for pos, ref in enumerate(layer):
            position[ref] = pos - (len(layer) - 1) / 2
    return result


def _topological(graph: Graph, among: set[str]) -> list[str]:
    indegree = {ref: 0 for ref in among}
    for ref in among:
        for nxt in graph.successors(ref):
            indegree[nxt] += 1
    ready = [r for r in graph.nodes() if r in among and indegree[r] == 0]
    out: list[str] = []
    while ready:
        ref = ready.pop(0)
        out.append(ref)
        for nxt in graph.successors(ref):
            indegree[nxt] -= 1
            if indegree[nxt] == 0:
                ready.append(nxt)
    return out
