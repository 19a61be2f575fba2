"""The recommender's own error: what it predicted for past jobs against what they took.

Every succeeded job writes back a result of source `job` carrying the hours predicted at launch
and the hours the run took (launcher/services/measurement.py). Grouped per node type and
workload: the number of jobs, median predicted and measured hours, the median absolute
relative error |predicted - measured| / measured, and the median signed error (bias: positive
means the recommender predicted too long). One query, bounded by CALIBRATION_ROWS_LIMIT.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass

from benchmarks.models import BenchmarkResult

CALIBRATION_ROWS_LIMIT = 5000


@dataclass(frozen=True)
class CalibrationRow:
    node_type: str
    facility: str
    workload: str
    jobs: int
    median_predicted_hours: float
    median_measured_hours: float
    median_abs_error: float  # fraction of the measured hours
    median_signed_error: float  # > 0: predicted too long
    worst_abs_error: float

    def percent(self) -> dict[str, str]:
        """The errors as percentages for display (one decimal; never shown as 0 unless 0)."""

        def fmt(x: float, sign: bool = False) -> str:
            text = f"{x * 100:{'+' if sign else ''}.1f}%"
            return (
                text
                if x == 0 or abs(x) >= 0.0005
                else ("<0.1%" if not sign else f"{'+' if x > 0 else '-'}<0.1%")
            )

        return {
            "abs": fmt(self.median_abs_error),
            "bias": fmt(self.median_signed_error, True),
            "worst": fmt(self.worst_abs_error),
            "predicted": f"{self.median_predicted_hours:.3g}",
            "measured": f"{self.median_measured_hours:.3g}",
        }


@dataclass(frozen=True)
class CalibrationPoint:
    node_type: str
    workload: str
    predicted_hours: float
    measured_hours: float
    label: str


def calibration_points() -> list[CalibrationPoint]:
    """Every measured job that had a prediction, most recent first (one query)."""
    rows = (
        BenchmarkResult.objects.filter(
            source=BenchmarkResult.Source.JOB, predicted_hours__isnull=False, measured_hours__gt=0
        )
        .order_by("-created_at")
        .values_list(
            "node_type__name",
            "node_type__facility__slug",
            "workload__key",
            "predicted_hours",
            "measured_hours",
            "catalogue_key",
        )[:CALIBRATION_ROWS_LIMIT]
    )
    return [
        CalibrationPoint(
            node_type=f"{n} ({f})", workload=w, predicted_hours=p, measured_hours=m, label=key
        )
        for n, f, w, p, m, key in rows
        if p is not None and m is not None  # the query excludes nulls; this tells the type
    ]


def calibration_table(points: list[CalibrationPoint] | None = None) -> list[CalibrationRow]:
    """One row per node type and workload, sorted by node type then workload."""
    groups: dict[tuple[str, str], list[CalibrationPoint]] = defaultdict(list)
    for p in calibration_points() if points is None else points:
        groups[(p.node_type, p.workload)].append(p)
    out = []
    for (node, workload), ps in sorted(groups.items()):
        signed = [(p.predicted_hours - p.measured_hours) / p.measured_hours for p in ps]
        out.append(
            CalibrationRow(
                node_type=node.rsplit(" (", 1)[0],
                facility=node.rsplit(" (", 1)[1].rstrip(")"),
                workload=workload,
                jobs=len(ps),
                median_predicted_hours=statistics.median(p.predicted_hours for p in ps),
                median_measured_hours=statistics.median(p.measured_hours for p in ps),
                median_abs_error=statistics.median(abs(e) for e in signed),
                median_signed_error=statistics.median(signed),
                worst_abs_error=max(abs(e) for e in signed),
            )
        )
    return out
