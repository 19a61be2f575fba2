"""Filters for benchmark result lists (the API and the /benchmarks/ page share them)."""

from __future__ import annotations

import django_filters

from benchmarks.models import BenchmarkResult
from benchmarks.recommender import PRECISIONS, STRATEGIES


class BenchmarkResultFilter(django_filters.FilterSet):
    """Filter by node type name, facility slug, workload key or model, and the setup."""

    node_type = django_filters.CharFilter(field_name="node_type__name", label="Node type")
    facility = django_filters.CharFilter(
        field_name="node_type__facility__slug", label="Facility (slug)"
    )
    workload = django_filters.CharFilter(field_name="workload__key", label="Workload key")
    model = django_filters.CharFilter(field_name="workload__model", label="Model")
    precision = django_filters.ChoiceFilter(choices=[(p, p) for p in PRECISIONS])
    strategy = django_filters.ChoiceFilter(choices=[(s, s) for s in STRATEGIES])
    gpus = django_filters.NumberFilter(min_value=1, label="GPUs")
    source = django_filters.ChoiceFilter(choices=BenchmarkResult.Source.choices)

    class Meta:
        model = BenchmarkResult
        fields = [
            "node_type",
            "facility",
            "workload",
            "model",
            "precision",
            "strategy",
            "gpus",
            "source",
        ]
