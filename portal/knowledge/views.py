"""Knowledge base pages: the System-Tooling Matrix with walkthroughs and search, and one page
per walkthrough. Public: the content is meant for anyone choosing a system."""

from __future__ import annotations

from django import forms
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from . import selectors


class SearchForm(forms.Form):
    """`?q=`: Django's CharField refuses a NUL character (no database column or page should get
    one back); a refused query searches nothing and the page says 400."""

    q = forms.CharField(required=False)


def index(request: HttpRequest) -> HttpResponse:
    search = SearchForm(request.GET)
    query = search.cleaned_data["q"][:200] if search.is_valid() else ""
    return render(
        request,
        "knowledge/index.html",
        {
            "matrix": selectors.matrix(),
            "query": query,
            "results": selectors.walkthrough_search(query) if query else None,
            "walkthroughs": selectors.published_walkthroughs(),
        },
        status=200 if search.is_valid() else 400,
    )


def page(request: HttpRequest, slug: str) -> HttpResponse:
    found = selectors.published_walkthroughs().filter(slug=slug).first()
    if found is None:
        raise Http404("No such walkthrough")
    return render(request, "knowledge/page.html", {"page": found})
