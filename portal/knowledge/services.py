"""Writes for the knowledge base. Admin saves go through these too, so the stored HTML and the
search index always match the Markdown."""

from __future__ import annotations

import re
from collections import Counter

from django.db import transaction
from django.utils.html import strip_tags

from allocations.models import Facility

from .markdown import render
from .models import SearchTerm, Support, System, Tool, Walkthrough

WORD = re.compile(r"[a-z0-9][a-z0-9+#.\-]*[a-z0-9+#]|[a-z0-9]")
TITLE_WEIGHT = 10


def words(text: str) -> list[str]:
    """Lower-case words of at most 40 characters (the index's tokeniser, also used for queries)."""
    return [w[:40] for w in WORD.findall((text or "").lower())]


@transaction.atomic
def walkthrough_save(
    *,
    slug: str,
    title: str,
    body_markdown: str,
    summary: str = "",
    facility: Facility | None = None,
    is_published: bool = True,
    walkthrough: Walkthrough | None = None,
) -> Walkthrough:
    """Create or update a walkthrough (by `walkthrough`, else by slug): renders and sanitises
    its body and rebuilds its search terms. Idempotent."""
    page = walkthrough or Walkthrough.objects.filter(slug=slug).first() or Walkthrough(slug=slug)
    page.slug, page.title, page.summary = slug, title, summary
    page.body_markdown, page.facility, page.is_published = body_markdown, facility, is_published
    page.body_html = render(body_markdown)
    page.save()
    weights: Counter[str] = Counter()
    for word in words(f"{title} {summary}"):
        weights[word] = TITLE_WEIGHT
    for word in words(strip_tags(page.body_html)):
        weights[word] += 1
    page.search_terms.all().delete()
    SearchTerm.objects.bulk_create(
        SearchTerm(walkthrough=page, term=t, weight=w) for t, w in weights.items()
    )
    return page


@transaction.atomic
def matrix_set(*, tool: str, system: str, status: str, note: str = "") -> Support:
    """Set one cell of the matrix (creating the tool and system rows if needed). Idempotent."""
    tool_row, _ = Tool.objects.get_or_create(name=tool)
    system_row, _ = System.objects.get_or_create(name=system)
    cell, _ = Support.objects.update_or_create(
        tool=tool_row, system=system_row, defaults={"status": status, "note": note}
    )
    return cell
