"""API views: parse, call a selector or service, answer. No business rules here."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, permissions, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from benchmarks import selectors, services
from benchmarks.models import BenchmarkResult
from core.figures import money_text

from . import serializers as s
from .filters import BenchmarkResultFilter


class CanSubmitResults(permissions.BasePermission):
    """Reading is for any signed-in user; recording results for staff and benchmarkers."""

    message = "Only staff and members of the benchmarkers group may record benchmark results."

    def has_permission(self, request: Request, view: object) -> bool:
        if request.method in permissions.SAFE_METHODS:
            return True
        return selectors.can_submit_results(request.user)


class BenchmarkResultViewSet(
    mixins.CreateModelMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    viewsets.GenericViewSet,
):
    """Benchmark results: list (filterable, paginated) and record one (the harness posts here)."""

    serializer_class = s.BenchmarkResultSerializer
    filterset_class = BenchmarkResultFilter
    api_conflicts = False  # recording a result moves no state (portal/schema.py)
    permission_classes = [permissions.IsAuthenticated, CanSubmitResults]

    def get_queryset(self) -> QuerySet[BenchmarkResult]:
        return selectors.benchmark_results()

    @extend_schema(
        request=s.BenchmarkResultInputSerializer, responses={201: s.BenchmarkResultSerializer}
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        data = s.BenchmarkResultInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        result = services.benchmark_result_record(by=request.user, **data.validated_data)
        stored = self.get_queryset().get(pk=result.pk)
        return Response(s.BenchmarkResultSerializer(stored).data, status=status.HTTP_201_CREATED)


class RecommendationView(APIView):
    """POST a workload; get every active node type ranked, with reasons and a request link."""

    api_conflicts = False  # a read with a body: nothing to conflict with (portal/schema.py)

    @extend_schema(
        request=s.RecommendationRequestSerializer, responses={200: s.RecommendationAnswerSerializer}
    )
    def post(self, request: Request) -> Response:
        if not isinstance(request.data, dict):
            return Response(
                {"non_field_errors": ["Send a JSON object."]}, status=status.HTTP_400_BAD_REQUEST
            )
        outcome = selectors.recommendations_for(data=request.data)
        body = outcome.as_dict()
        # Money is a decimal string in the API, hours a number (docs/api.md, "Figures").
        body["results"] = [_figures(row) for row in body["results"]]
        body["pareto"] = [_figures(row) for row in body["pareto"]]
        return Response(body)


def _figures(row: dict) -> dict:
    """A row's money as decimal strings and its hours as numbers, unrounded."""
    out = dict(row)
    for key in ("cost", "cost_on_demand"):
        if out.get(key) is not None:
            out[key] = money_text(str(out[key]))
    if out.get("request_gpu_hours") is not None:
        out["request_gpu_hours"] = float(out["request_gpu_hours"])
    return out
