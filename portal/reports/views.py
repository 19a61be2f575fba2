"""The usage report page and its CSV export (`?format=csv&table=usage|groups|wait|sizes|
efficiency`), and the API view `GET /api/v1/reports/usage/`. Thin: parse, select, render."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import renderers, serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from core import strict

from .charts import report_charts
from .selectors import FIGURES, GROUPS, PERIODS, usage_report
from .tables import GROUPS_WORD, tables, to_csv


class ReportQuery(serializers.Serializer):
    group_by = serializers.ChoiceField(choices=GROUPS, default="project")
    period = serializers.ChoiceField(choices=PERIODS, default="month")
    since = serializers.DateField(
        required=False, allow_null=True, help_text="Only usage and jobs from this date on."
    )
    table = serializers.ChoiceField(
        choices=["usage", "groups", "wait", "sizes", "efficiency"],
        default="usage",
        help_text="Which table `format=csv` returns.",
    )


def _figures(query: dict, csv: bool):
    """The job figures a request reads: a CSV its one table's, the page and the JSON all."""
    return [query["table"]] if csv else FIGURES


def _csv_response(table, name: str) -> HttpResponse:
    response = HttpResponse(to_csv(table), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="usage-{name}.csv"'
    return response


@login_required
def usage_report_page(request: HttpRequest) -> HttpResponse:
    query = ReportQuery(data=request.GET)
    if not query.is_valid():
        query = ReportQuery(data={})  # a bad choice on the page falls back to the defaults
        query.is_valid()
    q = query.validated_data
    csv = request.GET.get("format") == "csv"
    report = usage_report(
        request.user,
        group_by=q["group_by"],
        period=q["period"],
        since=q.get("since"),
        limit=None if csv else settings.PORTAL_REPORT_PAGE_GROUPS,
        figures=_figures(q, csv),
    )
    if csv:
        return _csv_response(tables(report)[q["table"]], q["table"])
    params = f"group_by={q['group_by']}&period={q['period']}" + (
        f"&since={q['since'].isoformat()}" if q.get("since") else ""
    )
    context = {
        "report": report,
        "hidden_groups": report.hidden_groups,
        "groups_word": GROUPS_WORD[report.group_by],
        "tables": tables(report).values(),
        "params": params,
        "charts": report_charts(report),
        "groups": GROUPS,
        "periods": PERIODS,
        "since": q.get("since"),
    }
    return render(request, "portal/usage_report.html", context)


class CSVRenderer(renderers.BaseRenderer):
    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return data if isinstance(data, str) else ""


class _TotalsSerializer(serializers.Serializer):
    """What every row of the report adds up: charged GPU-time and cost, jobs, failed, short."""

    group = strict.CharField()
    gpu_seconds = strict.IntegerField()
    gpu_hours = strict.FloatField()
    cost = serializers.DecimalField(max_digits=18, decimal_places=4)
    jobs = strict.IntegerField()
    failed = strict.IntegerField()
    short = strict.IntegerField()


class ReportRowSerializer(_TotalsSerializer):
    period = serializers.DateField()


class ReportGroupSerializer(_TotalsSerializer):
    short_or_failed_share = strict.FloatField(allow_null=True)


class WaitSerializer(serializers.Serializer):
    jobs = strict.IntegerField()
    mean_seconds = strict.FloatField(allow_null=True)
    p90_seconds = strict.FloatField(allow_null=True)


class SizeSerializer(serializers.Serializer):
    gpus = strict.IntegerField()
    jobs = strict.IntegerField()
    gpu_hours = strict.FloatField()


class EfficiencySerializer(serializers.Serializer):
    group = strict.CharField()
    # A field named like Field.source: DRF takes declared fields off the class; the
    # stubs see the attribute.
    source = strict.CharField()  # type: ignore[assignment]
    jobs = strict.IntegerField()
    mean_percent = strict.FloatField(allow_null=True)


class SplitSerializer(serializers.Serializer):
    jobs = strict.FloatField(help_text="GPU-hours charged by portal jobs")
    notebooks = strict.FloatField(help_text="GPU-hours charged by notebook sessions")
    other = strict.FloatField(help_text="GPU-hours of records of neither (work outside the portal)")


class UsageReportSerializer(serializers.Serializer):
    group_by = strict.CharField()
    period = strict.CharField()
    rows = ReportRowSerializer(many=True)
    groups = ReportGroupSerializer(many=True)
    totals = ReportGroupSerializer()
    wait = WaitSerializer()
    sizes = SizeSerializer(many=True)
    efficiency = EfficiencySerializer(many=True)
    split = SplitSerializer(help_text="The totals' GPU-hours by what charged them")
    units = serializers.DictField(
        child=strict.FloatField(),
        help_text="The totals' hours by unit: GPU-hours, and CPU-hours for facilities without "
        "GPUs (their ledger counts CPU-seconds)",
    )
    unit_label = strict.CharField(
        help_text="What the hours figures are: GPU-hours, CPU-hours, or both"
    )
    jobs_rolled_at = serializers.DateTimeField(
        allow_null=True,
        help_text="When the job figures of settled months were rolled up (hourly); null when "
        "every job was counted from its row",
    )


class UsageReportView(APIView):
    """GPU-hours, cost and jobs by PI, project, facility or user per month or week, with wait
    times, job sizes and utilisation. Staff see everything, PIs and managers their projects,
    anyone else 404. `format=csv` returns one table (`table=`, default the main one) as CSV."""

    renderer_classes = [renderers.JSONRenderer, CSVRenderer]

    def finalize_response(self, request, response, *args, **kwargs):
        # Errors are JSON (as documented) even when the CSV was asked for.
        if (
            response.status_code >= 400
            and getattr(request, "accepted_renderer", None) is not None
            and request.accepted_renderer.format == "csv"
        ):
            request.accepted_renderer = renderers.JSONRenderer()
            request.accepted_media_type = request.accepted_renderer.media_type
        return super().finalize_response(request, response, *args, **kwargs)

    @extend_schema(
        parameters=[
            ReportQuery,
            OpenApiParameter(
                "format",
                OpenApiTypes.STR,
                enum=["json", "csv"],
                description="`csv` for the table as CSV.",
            ),
        ],
        responses={
            200: UsageReportSerializer,
            (200, "text/csv"): OpenApiTypes.STR,
            400: OpenApiResponse(description="Per-field messages for a bad choice."),
            404: OpenApiResponse(description="No report for you (PIs, managers, staff)."),
        },
    )
    def get(self, request):
        query = ReportQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        q = query.validated_data
        csv = request.accepted_renderer.format == "csv"
        report = usage_report(
            request.user,
            group_by=q["group_by"],
            period=q["period"],
            since=q.get("since"),
            figures=_figures(q, csv),
        )
        if csv:
            response = Response(to_csv(tables(report)[q["table"]]))
            response["Content-Disposition"] = f'attachment; filename="usage-{q["table"]}.csv"'
            return response
        return Response(UsageReportSerializer(report).data)
