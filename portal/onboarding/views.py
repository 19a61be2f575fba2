"""Onboarding pages. The walk works with plain GET links and forms (no JavaScript needed); the
page embeds the whole chart so its script can walk it instantly, and reports each step to
`track` for the drop-off analytics."""

from __future__ import annotations

import secrets

from django import forms
from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from allocations.roles import is_staff
from core.bounds import ID_MAX

from . import selectors, services
from .diagram import render_svg, steps
from .graph import qref
from .models import Flowchart
from .presenters import breadcrumbs, outcome_cards, outline, path_description

SESSION_KEY = "onboarding_walk"


def _walk_token(request: HttpRequest) -> str:
    """A random token in the visitor's session: the only thing that ties their steps together."""
    token = request.session.get(SESSION_KEY)
    if not token:
        token = request.session[SESSION_KEY] = secrets.token_urlsafe(18)
    return token


class _Preview(forms.Form):
    """`?version=<id>`, parsed by Django: "²" passes `isdigit()` but is no number, and an id past
    64 bits overflows SQLite; either is ignored (the published chart shows)."""

    version = forms.IntegerField(min_value=1, max_value=ID_MAX)


def _chart_for(request: HttpRequest) -> Flowchart | None:
    """The published chart; staff may preview another version with `?version=<id>`."""
    preview = _Preview(request.GET)
    if is_staff(request.user) and preview.is_valid():
        return Flowchart.objects.filter(pk=preview.cleaned_data["version"]).first()
    return selectors.published_flowchart()


@require_GET
def walk(request: HttpRequest) -> HttpResponse:
    """One question (or the outcome) for the path in `?path=`; `?prior=..&answer=..` (the plain
    form) redirects to the canonical, shareable URL."""
    if "answer" in request.GET:
        path = (
            selectors.parse_path(request.GET.get("prior", ""))
            + selectors.parse_path(request.GET["answer"])[:1]
        )
        return redirect(selectors.walk_url(path))
    flowchart = _chart_for(request)
    if flowchart is None:
        return render(request, "onboarding/unavailable.html", status=503)
    chart = selectors.chart_load(flowchart)
    position = selectors.walk_resolve(chart, selectors.parse_path(request.GET.get("path", "")))
    if flowchart.status == Flowchart.Status.PUBLISHED:
        services.walk_record(flowchart=flowchart, token=_walk_token(request), position=position)
    on_path = {qref(q.key) for q, _ in position.steps}
    if position.node_ref:
        on_path.add(position.node_ref)
    taken = {f"{q.key}:{c.key}" for q, c in position.steps}
    return render(
        request,
        "onboarding/walk.html",
        {
            "chart": chart,
            "position": position,
            "crumbs": breadcrumbs(position),
            "back_url": selectors.walk_url(position.path[:-1]),
            "back_path": selectors.PATH_SEPARATOR.join(position.path[:-1]),
            "outcome_cards": outcome_cards(chart, position),
            "recommender_url": selectors.recommender_url(position.facts),
            "diagram": render_svg(
                chart.graph,
                on_path=on_path,
                current=position.node_ref,
                taken=taken,
                description=path_description(chart, position),
            ),
            "steps": steps(chart.graph, on_path=on_path, current=position.node_ref, taken=taken),
            "outline": outline(chart),
            "flow": selectors.flow_payload(chart),
        },
    )


@require_POST
def track(request: HttpRequest) -> HttpResponse:
    """The page's script reports a step taken without a page load. 204, nothing to show."""
    flowchart = selectors.published_flowchart()
    if flowchart is not None:
        chart = selectors.chart_load(flowchart)
        position = selectors.walk_resolve(chart, selectors.parse_path(request.POST.get("path", "")))
        services.walk_record(flowchart=flowchart, token=_walk_token(request), position=position)
    return HttpResponse(status=204)


@staff_member_required
def stats(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    """How many walks reached each question and outcome, and where walks stopped."""
    flowchart = get_object_or_404(Flowchart, pk=pk) if pk else selectors.published_flowchart()
    if flowchart is None:
        return render(request, "onboarding/unavailable.html", status=503)
    return render(
        request,
        "onboarding/stats.html",
        {
            "flowchart": flowchart,
            "funnel": selectors.funnel(flowchart),
            "charts": Flowchart.objects.all(),
        },
    )
