"""Pages: thin views over the same selectors the API uses. Both pages are public and read-only
(benchmark figures and facility policies are not confidential), like the onboarding flow that
hands over to /recommend/; requesting still needs a login."""

from __future__ import annotations

from django.conf import settings
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.module_loading import import_string

from benchmarks import calibration, charts, presenters, selectors
from benchmarks.api.filters import BenchmarkResultFilter
from benchmarks.forms import RecommendForm
from core.refusals import form_call

PAGE_SIZE = 50


def recommend_page(request: HttpRequest) -> HttpResponse:
    """GET form (shareable URL); with `model` in the query, the ranked options and charts."""
    inputs = selectors.recommender_inputs()
    form = RecommendForm(inputs.workloads, request.GET)
    context: dict = {"form": form}
    if form.submitted:
        outcome = form_call(
            form, selectors.recommendations_for, data=form.values(request.GET), inputs=inputs
        )
        if outcome is not None:
            context.update(
                outcome=outcome,
                results=outcome.results,
                rows=presenters.ranked_rows(outcome.results),
                usable=sum(1 for r in outcome.results if r["eligible"] and r["fits_memory"]),
                time_cost=charts.time_vs_cost(outcome.results),
                precision_chart=charts.throughput_per_precision(
                    selectors.throughput_by_precision(outcome)
                ),
            )
    return render(request, "benchmarks/recommend.html", context)


def benchmark_list(request: HttpRequest) -> HttpResponse:
    """Filterable, paginated results with source and citation; scaling charts where a
    configuration was measured at several GPU counts, and the recommender's calibration over
    past jobs, and placement's error per facility (the launcher's rows, named by
    settings.PORTAL_PLACEMENT_ERRORS). Five queries whatever the row count."""
    # Invalid filter values are shown on the form and ignored (django-filter's behaviour).
    filterset = BenchmarkResultFilter(request.GET, queryset=selectors.benchmark_results())
    results = filterset.qs
    page = Paginator(results, PAGE_SIZE).get_page(request.GET.get("page"))
    series = selectors.scaling_series(results)
    points = calibration.calibration_points()
    return render(
        request,
        "benchmarks/benchmark_list.html",
        {
            "filter": filterset,
            "page": page,
            "series": series,
            "scaling_chart": charts.scaling(series) if series else None,
            "calibration": calibration.calibration_table(points),
            "calibration_chart": charts.calibration(points) if points else None,
            "placement_errors": import_string(settings.PORTAL_PLACEMENT_ERRORS)(),
        },
    )
