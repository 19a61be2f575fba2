"""Reads for the knowledge base (all public). Each runs a fixed number of queries."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Q, QuerySet, Sum

from .models import Support, System, Tool, Walkthrough
from .services import words


@dataclass
class Matrix:
    systems: list[System]
    rows: list[tuple[Tool, list[Support | None]]]  # one cell per system, None = not yet known


def matrix() -> Matrix:
    systems = list(System.objects.select_related("facility"))
    tools = list(Tool.objects.all())
    cells = {(c.tool_id, c.system_id): c for c in Support.objects.all()}
    return Matrix(systems, [(t, [cells.get((t.pk, s.pk)) for s in systems]) for t in tools])


def tooling_by_facility(facility_ids: list[int]) -> dict[int, list[Support]]:
    """Per facility, the matrix cells of its system (tool names included), tools in order."""
    found: dict[int, list[Support]] = {fid: [] for fid in facility_ids}
    cells = (
        Support.objects.filter(system__facility_id__in=facility_ids)
        .select_related("tool", "system")
        .order_by("tool__order", "tool__name")
    )
    for cell in cells:
        if cell.system.facility_id is not None:  # always (the filter); this tells the type
            found[cell.system.facility_id].append(cell)
    return found


def published_walkthroughs() -> QuerySet[Walkthrough]:
    return Walkthrough.objects.filter(is_published=True).select_related("facility")


def walkthroughs_by_facility(facility_ids: list[int]) -> dict[int, list[Walkthrough]]:
    found: dict[int, list[Walkthrough]] = {fid: [] for fid in facility_ids}
    for page in published_walkthroughs().filter(facility_id__in=facility_ids):
        if page.facility_id is not None:  # always (the filter); this tells the type
            found[page.facility_id].append(page)
    return found


def walkthrough_search(query: str, *, limit: int = 20) -> list[Walkthrough]:
    """Published walkthroughs containing every word of `query` (as a word prefix), best first:
    title and summary matches outrank body matches. Uses the indexed term table."""
    terms = list(dict.fromkeys(words(query)))[:8]
    if not terms:
        return []
    match = Q()
    for term in terms:
        match |= Q(search_terms__term__startswith=term)
    hits = {
        f"hit_{i}": Count("search_terms", filter=Q(search_terms__term__startswith=t))
        for i, t in enumerate(terms)
    }
    ranked = (
        published_walkthroughs()
        .filter(match)
        .annotate(score=Sum("search_terms__weight", filter=match), **hits)
        .filter(**{f"hit_{i}__gt": 0 for i in range(len(terms))})
        .order_by("-score", "title")
    )
    return list(ranked[:limit])
