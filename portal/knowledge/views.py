"""Knowledge base pages: the System-Tooling Matrix with walkthroughs and search, and one page
per walkthrough. Public: the content is meant for anyone choosing a system."""
from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from . import selectors


def index(request: HttpRequest) -> HttpResponse:
    query = request.GET.get("q", "").strip()[:200]
    return render(request, "knowledge/index.html", {
        "matrix": selectors.matrix(), "query": query,
        "results": selectors.walkthrough_search(query) if query else None,
        "walkthroughs": selectors.published_walkthroughs(),
    })


def page(request: HttpRequest, slug: str) -> HttpResponse:
    found = selectors.published_walkthroughs().filter(slug=slug).first()
    if found is None:
        raise Http404("No such walkthrough")
    return render(request, "knowledge/page.html", {"page": found})
