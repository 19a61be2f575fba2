"""`GET /api/v1/onboarding/flow/`: the published chart as data, for scripts and other front
ends. Public (AllowAny): the chart is the same public information the page shows."""
from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from allocations.api import strict as serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from . import selectors


class _Target(serializers.Serializer):
    type = serializers.ChoiceField(choices=["question", "outcome"])
    key = serializers.CharField()


class _Choice(serializers.Serializer):
    key = serializers.CharField()
    label = serializers.CharField()
    sets = serializers.DictField(child=serializers.CharField())
    next = _Target()


class _Question(serializers.Serializer):
    key = serializers.CharField()
    text = serializers.CharField()
    help_text = serializers.CharField()
    recommender_handover = serializers.BooleanField()
    choices = _Choice(many=True)


class _Outcome(serializers.Serializer):
    key = serializers.CharField()
    title = serializers.CharField()
    facility = serializers.CharField(help_text="Facility slug")
    facility_name = serializers.CharField()
    facility_kind = serializers.CharField()
    node_type = serializers.CharField(allow_null=True)
    kind = serializers.ChoiceField(choices=["trial", "full"], help_text="Request kind")
    track = serializers.CharField()
    gpu_hours = serializers.IntegerField(allow_null=True)
    explanation = serializers.CharField()
    request_url = serializers.URLField(help_text="The request form, pre-filled; add the "
                                                 "`sets` of the answers given as query "
                                                 "parameters.")


class FlowSerializer(serializers.Serializer):
    name = serializers.CharField()
    version = serializers.IntegerField()
    published_at = serializers.DateTimeField(allow_null=True)
    start = serializers.CharField(help_text="Key of the first question")
    questions = _Question(many=True)
    outcomes = _Outcome(many=True)
    recommender_url = serializers.URLField()


class FlowView(APIView):
    permission_classes = [AllowAny]

    @extend_schema(responses={200: FlowSerializer, 404: OpenApiResponse(
        description="No chart is published")}, summary="The onboarding flowchart as data")
    def get(self, request: Request) -> Response:
        flowchart = selectors.published_flowchart()
        if flowchart is None:
            return Response({"detail": "No onboarding chart is published."}, status=404)
        chart = selectors.chart_load(flowchart)
        return Response(selectors.flow_payload(chart, absolute=request.build_absolute_uri))
