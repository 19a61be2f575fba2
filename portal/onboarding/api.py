"""`GET /api/v1/onboarding/flow/`: the published chart as data, for scripts and other front
ends. Public (AllowAny): the chart is the same public information the page shows."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core import strict
from core.figure_fields import HoursField

from . import selectors


class _Target(serializers.Serializer):
    type = serializers.ChoiceField(choices=["question", "outcome"])
    key = strict.CharField()


class _Choice(serializers.Serializer):
    key = strict.CharField()
    # A field named like Field.label: DRF takes declared fields off the class; the
    # stubs see the attribute.
    label = strict.CharField()  # type: ignore[assignment]
    sets = serializers.DictField(child=strict.CharField())
    next = _Target()


class _Question(serializers.Serializer):
    key = strict.CharField()
    text = strict.CharField()
    # A field named like Field.help_text: DRF takes declared fields off the class; the
    # stubs see the attribute.
    help_text = strict.CharField()  # type: ignore[assignment]
    recommender_handover = serializers.BooleanField()
    choices = _Choice(many=True)


class _Outcome(serializers.Serializer):
    key = strict.CharField()
    title = strict.CharField()
    facility = strict.CharField(help_text="Facility slug")
    facility_name = strict.CharField()
    facility_kind = strict.CharField()
    node_type = strict.CharField(allow_null=True)
    kind = serializers.ChoiceField(choices=["trial", "full"], help_text="Request kind")
    track = strict.CharField()
    gpu_hours = HoursField(
        allow_null=True, help_text="The whole GPU-hours `request_url` asks for, if any"
    )
    explanation = strict.CharField()
    request_url = strict.URLField(
        help_text="The request form, pre-filled; add the "
        "`sets` of the answers given as query "
        "parameters."
    )


class FlowSerializer(serializers.Serializer):
    name = strict.CharField()
    version = strict.IntegerField()
    published_at = serializers.DateTimeField(allow_null=True)
    start = strict.CharField(help_text="Key of the first question")
    questions = _Question(many=True)
    outcomes = _Outcome(many=True)
    recommender_url = strict.URLField()


class FlowView(APIView):
    permission_classes = [AllowAny]

    @extend_schema(
        responses={200: FlowSerializer, 404: OpenApiResponse(description="No chart is published")},
        summary="The onboarding flowchart as data",
    )
    def get(self, request: Request) -> Response:
        flowchart = selectors.published_flowchart()
        if flowchart is None:
            return Response({"detail": "No onboarding chart is published."}, status=404)
        chart = selectors.chart_load(flowchart)
        flow = selectors.flow_payload(chart, absolute=request.build_absolute_uri)
        for outcome in flow["outcomes"]:  # hours are numbers in every answer (docs/api.md)
            if outcome["gpu_hours"] is not None:
                outcome["gpu_hours"] = float(outcome["gpu_hours"])
        return Response(flow)
