"""Jobs and sweeps API: thin views over the launcher's selectors and services."""

from __future__ import annotations

import django_filters
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from core.filters import IdFilter

from .. import selectors, services, sweep_selectors, sweepgrid
from ..idempotency import Idempotency, launch_once
from ..models import IdempotencyKey, Job, Sweep
from ..services import placement as placing
from ..services.logs import job_log_fresh
from .fields import AUTO
from .idempotent import IDEMPOTENCY_KEY, created, idempotency_of
from .placement import work_of
from .serializers import (
    JobEstimateOut,
    JobListOut,
    JobLogOut,
    JobOut,
    LaunchInput,
    SweepCancelOut,
    SweepDetailOut,
    SweepEstimateOut,
    SweepInput,
    SweepOut,
)

_CONFLICT = OpenApiResponse(
    description="Not allowed now: the allocation is not active, or the "
    "estimate exceeds the GPU-hours (or budget) left; the body "
    "carries the numbers. On a launch also: its "
    "Idempotency-Key was used for another request."
)
_BAD = OpenApiResponse(
    description="Per-field messages, nested as the body is (params.<field>, grid.<field>)."
)


class JobFilter(django_filters.FilterSet):
    allocation = IdFilter(field_name="allocation_id", label="Only this allocation's jobs")
    sweep = IdFilter(field_name="sweep_id", label="Only this sweep's cells")

    class Meta:
        model = Job
        fields = ["allocation", "sweep"]


def _launch_sweep(request, v, idempotency: Idempotency | None):
    if v["allocation"] == AUTO:
        return placing.sweep_launch_placed(
            by=request.user,
            work=work_of(v, sweep=True),
            name=v["name"],
            prefer=v["prefer"],
            project_id=v.get("project"),
            idempotency=idempotency,
        )
    return services.sweep_launch(
        by=request.user,
        allocation=v["allocation"],
        grid=v["grid"],
        gpus=v["gpus"],
        wall_time_minutes=v["wall_time_minutes"],
        params=v["params"],
        concurrency=v["concurrency"],
        name=v["name"],
        idempotency=idempotency,
    )


def _launched(request, kind: str, pk: int):
    """What an idempotency key launched before, as its caller sees it (404 if no longer)."""
    rows = (
        selectors.visible_sweeps(request.user)
        if kind == IdempotencyKey.Kind.SWEEP
        else selectors.visible_jobs(request.user)
    )
    found = rows.filter(pk=pk).first()
    if found is None:
        raise selectors.NotVisible("Not found.")
    return found


def _out(launched) -> dict:
    return (SweepOut if isinstance(launched, Sweep) else JobOut)(launched).data


class JobViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """jobs/ (list; POST launches a job or a sweep), jobs/{id}/, jobs/{id}/cancel/, jobs/{id}/rerun/,
    jobs/{id}/log/."""

    filterset_class = JobFilter
    pages_by_id = True  # portal.apiconf.Pagination: a deep page's ids from the job rows alone

    def get_queryset(self):
        return selectors.visible_jobs(self.request.user)

    def known_count(self) -> int | None:
        """The list's length without a COUNT where it is every job (staff and reviewers, no
        filter; selectors.visible_jobs_total). A centre's staff list paged through a million
        rows counted them on every page."""
        filtered = set(self.request.query_params) & set(JobFilter.base_filters)
        if self.action != "list" or filtered:
            return None
        return selectors.visible_jobs_total(self.request.user)

    def get_serializer_class(self):
        return JobListOut if self.action == "list" else JobOut

    @extend_schema(
        request=LaunchInput,
        responses={201: JobOut, 400: _BAD, 409: _CONFLICT},
        parameters=[IDEMPOTENCY_KEY],
        description='Launch a training job (or, with workload "sweep" and a grid, a '
        "sweep: POST sweeps/ is the sweep's own path).",
    )
    def create(self, request):
        idempotency = idempotency_of(request, "jobs")

        def launch():
            data = LaunchInput(
                data=request.data, allocations=selectors.sees_allocations(request.user)
            )
            data.is_valid(raise_exception=True)
            v = data.validated_data
            if v["workload"] == "sweep":
                return _launch_sweep(request, v, idempotency)
            if v["allocation"] == AUTO:
                return placing.job_launch_placed(
                    by=request.user,
                    work=work_of(v, sweep=False),
                    prefer=v["prefer"],
                    project_id=v.get("project"),
                    idempotency=idempotency,
                )
            return services.job_launch(
                by=request.user,
                allocation=v["allocation"],
                gpus=v["gpus"],
                wall_time_minutes=v["wall_time_minutes"],
                params=v["params"],
                idempotency=idempotency,
            )

        launched, replayed = launch_once(
            idempotency, launch=launch, find=lambda kind, pk: _launched(request, kind, pk)
        )
        return created(_out(launched), replayed=replayed)

    @extend_schema(request=LaunchInput, responses={200: JobEstimateOut, 400: _BAD})
    @action(detail=False, methods=["post"])
    def estimate(self, request):
        """What POST jobs/ with this body would reserve (GPU-hours, cost, with its basis) and
        whether it fits what is left; launches nothing. A sweep's body: POST sweeps/estimate/."""
        data = LaunchInput(data=request.data, allocations=selectors.sees_allocations(request.user))
        data.is_valid(raise_exception=True)
        v = data.validated_data
        if v["allocation"] == AUTO:
            return _auto_estimate()
        if v["workload"] == "sweep":
            return Response(
                {"workload": ["Estimate a sweep with POST sweeps/estimate/."]},
                status=status.HTTP_400_BAD_REQUEST,
            )
        return Response(
            JobEstimateOut(
                selectors.job_estimate(
                    allocation=v["allocation"],
                    params=v["params"],
                    gpus=v["gpus"],
                    wall_time_minutes=v["wall_time_minutes"],
                )
            ).data
        )

    @extend_schema(request=None, responses=JobOut)
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        job = services.job_cancel(job=self.get_object(), by=request.user)
        return Response(JobOut(job).data)

    @extend_schema(
        request=None,
        responses={201: JobOut, 400: _BAD, 409: _CONFLICT},
        description="Run again: a new job with this job's workload, GPUs, wall time, "
        "parameters and seed on the same allocation (docs/launcher.md).",
    )
    @action(detail=True, methods=["post"])
    def rerun(self, request, pk=None):
        job = services.job_rerun(job=self.get_object(), by=request.user)
        return Response(JobOut(job).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses=JobLogOut)
    @action(detail=True, methods=["get"])
    def log(self, request, pk=None):
        job = selectors.job_log(job_id=self.get_object().pk, by=request.user)
        job = job_log_fresh(job=job)  # a running job's lines as the trainer wrote them
        return Response({"id": job.pk, "state": job.state, "log": job.log_tail})


class SweepViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """sweeps/ (list; POST launches a grid), sweeps/estimate/, sweeps/{id}/ (with progress counts
    and the leaderboard), sweeps/{id}/cancel/."""

    serializer_class = SweepOut

    def get_queryset(self):
        return selectors.visible_sweeps(self.request.user)

    @extend_schema(
        request=SweepInput,
        responses={201: SweepOut, 400: _BAD, 409: _CONFLICT},
        parameters=[IDEMPOTENCY_KEY],
    )
    def create(self, request):
        """Launch a sweep: one training run per grid cell, checked on its total estimate."""
        idempotency = idempotency_of(request, "sweeps")

        def launch():
            data = SweepInput(
                data=request.data, allocations=selectors.sees_allocations(request.user)
            )
            data.is_valid(raise_exception=True)
            return _launch_sweep(request, data.validated_data, idempotency)

        launched, replayed = launch_once(
            idempotency, launch=launch, find=lambda kind, pk: _launched(request, kind, pk)
        )
        return created(_out(launched), replayed=replayed)

    @extend_schema(request=SweepInput, responses={200: SweepEstimateOut, 400: _BAD})
    @action(detail=False, methods=["post"])
    def estimate(self, request):
        """What POST sweeps/ with this body would cost (cells x per-cell GPU-hours, with its
        basis) and whether it fits what is left; launches nothing."""
        data = SweepInput(data=request.data, allocations=selectors.sees_allocations(request.user))
        data.is_valid(raise_exception=True)
        if data.validated_data["allocation"] == AUTO:
            return _auto_estimate()
        return Response(
            SweepEstimateOut(selectors.sweep_estimate(**_estimate_args(data.validated_data))).data
        )

    @extend_schema(
        responses=SweepDetailOut,
        parameters=[
            OpenApiParameter(
                "sort_by",
                OpenApiTypes.STR,
                enum=list(sweepgrid.METRIC_NAMES),
                description="Leaderboard metric (default: the sweep's own)",
            ),
            OpenApiParameter(
                "level",
                OpenApiTypes.STR,
                description="Metrics level in metrics.json (default `patient`)",
            ),
        ],
    )
    def retrieve(self, request, pk=None):
        sweep = self.get_object()
        counts = sweep_selectors.sweep_counts(sweep)
        board = sweep_selectors.sweep_leaderboard(
            sweep,
            sort_by=request.query_params.get("sort_by"),
            level=request.query_params.get("level", "patient"),
        )
        return Response(
            {
                **SweepOut(sweep).data,
                "counts": counts,
                "finished": sweep_selectors.sweep_finished(sweep, counts),
                "leaderboard": board,
                "schedule": sweep_selectors.sweep_schedule(sweep),
            }
        )

    @extend_schema(request=None, responses=SweepCancelOut)
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        cancelled = services.sweep_cancel(sweep=self.get_object(), by=request.user)
        return Response({"id": int(pk), "cancelled": cancelled})


def _auto_estimate() -> Response:
    return Response(
        {"allocation": ["An estimate is for one allocation: POST placements/ compares them all."]},
        status=status.HTTP_400_BAD_REQUEST,
    )


def _estimate_args(v) -> dict:
    return {
        "allocation": v["allocation"],
        "grid": v["grid"],
        "params": v["params"],
        "gpus": v["gpus"],
        "wall_time_minutes": v["wall_time_minutes"],
        "concurrency": v.get("concurrency"),
    }
