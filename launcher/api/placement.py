"""POST placements/ (where would this job or sweep finish first, or cost least, among the
caller's allocations) and GET placements/calibration/ (how right placement was, per
facility): thin views over launcher/services/placement.py and launcher/placement_selectors.py
(docs/placement.md)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from ..placement.record import placement_record
from ..placement_selectors import placement_error_rows
from ..services import placement as placing
from .placement_out import PlacementCalibrationOut, PlacementOut
from .serializers import LaunchInput


class PlacementInput(LaunchInput):
    """A job's body as POST jobs/ takes it (or a sweep's: `workload` "sweep" and a `grid`),
    without `allocation`: every allocation of the caller's projects (or of `project`) is a
    candidate."""

    allocation = None  # type: ignore[assignment]


def work_of(v: dict[str, Any], *, sweep: bool | None = None) -> placing.Work:
    """The validated launch body as what placement places (a sweep: `workload` "sweep", or
    the body of POST sweeps/)."""
    sweep = v.get("workload") == "sweep" if sweep is None else sweep
    return placing.Work(
        params=v["params"],
        gpus=v["gpus"],
        wall_time_minutes=v["wall_time_minutes"],
        grid=v["grid"] if sweep else None,
        concurrency=v.get("concurrency") if sweep else None,
    )


class PlacementViewSet(viewsets.ViewSet):
    """placements/ (POST: the ranking), placements/calibration/ (GET: its error per facility)."""

    @extend_schema(
        request=PlacementInput,
        responses={
            200: PlacementOut,
            400: OpenApiResponse(description="Per-field messages, as POST jobs/ gives them."),
        },
        description="Every allocation you may launch on, eligible or why not, with the "
        "predicted run (and its interval), wait, finish, GPU-hours, cost and what would be "
        'left, ranked by `prefer` ("finish" or "cost"). Launches nothing.',
    )
    def create(self, request: Request) -> Response:
        data = PlacementInput(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        ranked = placing.placements(
            by=request.user, work=work_of(v), prefer=v["prefer"], project_id=v.get("project")
        )
        return Response(PlacementOut(placement_record(ranked)).data)

    @extend_schema(responses=PlacementCalibrationOut)
    @action(detail=False, methods=["get"])
    def calibration(self, request: Request) -> Response:
        """Placement measured against reality: per facility, the median and 90th percentile
        of |predicted - real| wait (launch to start) and finish of placed jobs, with n."""
        return Response(
            PlacementCalibrationOut(
                {
                    "facilities": placement_error_rows(),
                    "basis": 'Jobs launched with "allocation": "auto" keep their predicted '
                    "wait and finish; real wait = started - launched, real finish = finished "
                    "(seconds).",
                }
            ).data
        )
