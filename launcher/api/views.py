"""Jobs and sweeps API: thin views over the launcher's selectors and services."""
from __future__ import annotations

from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from .. import selectors, services, sweepgrid
from ..services import LaunchConflict
from .serializers import JobListOut, JobOut, LaunchInput, SweepOut


def _conflict(error: LaunchConflict) -> Response:
    return Response({"detail": error.message, **error.data}, status=status.HTTP_409_CONFLICT)


class JobViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """jobs/ (list; POST launches a job or a sweep), jobs/{id}/, jobs/{id}/cancel/, jobs/{id}/log/."""

    def get_queryset(self):
        qs = selectors.visible_jobs(self.request.user)
        allocation = self.request.query_params.get("allocation")
        if allocation and allocation.isdigit():
            qs = qs.filter(allocation_id=int(allocation))
        return qs

    def get_serializer_class(self):
        return JobListOut if self.action == "list" else JobOut

    def create(self, request):
        data = LaunchInput(data=request.data,
                           allocations=selectors.launchable_allocations(request.user))
        data.is_valid(raise_exception=True)
        v = data.validated_data
        try:
            if v["workload"] == "sweep":
                sweep = services.sweep_launch(
                    by=request.user, allocation=v["allocation"], grid=v["grid"], gpus=v["gpus"],
                    wall_time_minutes=v["wall_time_minutes"], params=v["params"],
                    concurrency=v["concurrency"], name=v["name"])
                return Response(SweepOut(sweep).data, status=status.HTTP_201_CREATED)
            job = services.job_launch(by=request.user, allocation=v["allocation"], gpus=v["gpus"],
                                      wall_time_minutes=v["wall_time_minutes"], params=v["params"])
        except LaunchConflict as error:
            return _conflict(error)
        return Response(JobOut(job).data, status=status.HTTP_201_CREATED)

    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        job = services.job_cancel(job=self.get_object(), by=request.user)
        return Response(JobOut(job).data)

    @action(detail=True, methods=["get"])
    def log(self, request, pk=None):
        job = self.get_object()
        return Response({"id": job.pk, "state": job.state, "log": job.log_tail})


class SweepViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """sweeps/, sweeps/{id}/ (with progress counts and the leaderboard), sweeps/{id}/cancel/."""

    serializer_class = SweepOut

    def get_queryset(self):
        return selectors.visible_sweeps(self.request.user)

    def retrieve(self, request, pk=None):
        sweep = self.get_object()
        try:
            board = selectors.sweep_leaderboard(sweep, sort_by=request.query_params.get("sort_by"),
                                                level=request.query_params.get("level", "patient"))
        except sweepgrid.GridError as error:
            return Response({"sort_by": [str(error)]}, status=status.HTTP_400_BAD_REQUEST)
        return Response({**SweepOut(sweep).data, "counts": selectors.sweep_counts(sweep),
                         "leaderboard": board})

    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        cancelled = services.sweep_cancel(sweep=self.get_object(), by=request.user)
        return Response({"id": int(pk), "cancelled": cancelled})


