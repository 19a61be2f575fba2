"""Reads: benchmark results for lists, and the recommender fed from the database.

The database is the single source at run time: node types come from `allocations.NodeType`
rows with their facility's policy, workloads and results from this app's tables. Each read
runs a fixed number of queries whatever the number of rows.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.db.models import QuerySet
from django.urls import reverse

from allocations.connection import connection_note
from allocations.models import NodeType
from allocations.roles import is_staff
from benchmarks.models import BENCHMARKERS_GROUP, BenchmarkResult
from benchmarks.models import Workload as WorkloadRow
from benchmarks.recommender import (
    PRECISIONS,
    BenchmarkRecord,
    NodeTypeInfo,
    Recommendation,
    RecommendationInputError,
    Workload,
    WorkloadRequest,
    parse_request,
    recommend,
)
from core.errors import Invalid

_PEAKS = ("fp16", "bf16", "fp32", "fp64", "tf32")


def can_submit_results(user: Any) -> bool:
    """Staff and members of the `benchmarkers` group may record results; nobody else."""
    if not getattr(user, "is_authenticated", False):
        return False
    return bool(is_staff(user) or user.groups.filter(name=BENCHMARKERS_GROUP).exists())


def benchmark_results() -> QuerySet[BenchmarkResult]:
    """Every result with what a list shows joined in (one query per page, whatever the rows).

    Benchmark figures are not confidential: any signed-in user sees all of them.
    """
    return BenchmarkResult.objects.select_related("node_type__facility", "workload", "submitted_by")


# --- Rows to the recommender's dataclasses ---------------------------------------------------
def workload_info(row: WorkloadRow) -> Workload:
    """A workload row as the recommender's dataclass."""
    return Workload(
        key=row.key,
        model=row.model,
        dims=row.dims,
        family=row.family,
        reference_size=row.reference_size,
        parameters=row.parameters,
        train_flops_per_sample=row.train_flops_per_sample,
        activation_bytes_per_sample=row.activation_bytes_per_sample,
        description=row.description,
    )


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def node_type_info(row: NodeType, name: str | None = None) -> NodeTypeInfo:
    """A node type row (with its facility loaded) merged with the facility's policy."""
    f = row.facility
    return NodeTypeInfo(
        name=name or row.name,
        facility=f.slug,
        kind=f.kind,
        accelerator=row.accelerator,
        memory_gb=float(row.accelerator_memory_gb),
        accelerators_per_node=row.accelerators_per_node,
        peak_tflops={p: getattr(row, f"peak_tflops_{p}") for p in _PEAKS},
        allowed_sensitivity=tuple(f.allowed_sensitivity or ()),
        notebooks=f.offers_notebooks,
        root=f.offers_root,
        public_web_service=f.offers_public_web,
        gpu_hour_rate=float(f.gpu_hour_rate),
        price_on_demand=_float(row.price_on_demand),
        price_spot=_float(row.price_spot),
        max_accelerators=row.max_accelerators,
        device=row.device,
    )


@dataclass(frozen=True)
class RecommenderInputs:
    """Everything one recommendation needs, loaded in three queries.

    `rows` maps the recommender's node name to its row. Names are the rows' own names, except
    where two facilities offer a node type of the same name (g5.xlarge on two clouds): those
    become "name (facility)", so results never attach to the wrong facility's node type.
    """

    workloads: list[Workload]
    nodes: list[NodeTypeInfo]
    records: list[BenchmarkRecord]
    rows: dict[str, NodeType]


def recommender_inputs() -> RecommenderInputs:
    """Workloads, active facilities' node types and their results, as plain dataclasses."""
    rows = list(NodeType.objects.filter(facility__is_active=True).select_related("facility"))
    counts = Counter(r.name for r in rows)
    names = {
        r.pk: (r.name if counts[r.name] == 1 else f"{r.name} ({r.facility.slug})") for r in rows
    }
    fields = (
        "node_type_id",
        "workload__model",
        "workload__dims",
        "image_size",
        "precision",
        "strategy",
        "gpus",
        "batch_size",
        "throughput",
        "throughput_min",
        "throughput_max",
        "peak_memory_gb",
        "source",
        "citation",
        "id",
        "catalogue_key",
    )
    records = [
        BenchmarkRecord(
            node_type=names[v[0]],
            model=v[1],
            dims=v[2],
            image_size=v[3],
            precision=v[4],
            strategy=v[5],
            gpus=v[6],
            batch_size=v[7],
            throughput=v[8],
            throughput_min=v[9],
            throughput_max=v[10],
            peak_memory_gb=v[11],
            source=v[12],
            citation=v[13],
            id=v[15] or f"result-{v[14]}",
        )
        for v in BenchmarkResult.objects.filter(node_type_id__in=names).values_list(*fields)
    ]
    return RecommenderInputs(
        workloads=[workload_info(w) for w in WorkloadRow.objects.all()],
        nodes=[node_type_info(r, names[r.pk]) for r in rows],
        records=records,
        rows={names[r.pk]: r for r in rows},
    )


# --- Recommendations ---------------------------------------------------------------------------
def request_gpu_hours(rec: Recommendation) -> int | None:
    """The whole GPU-hours to ask for: the prediction rounded up, at least one."""
    return None if rec.gpu_hours is None else max(1, math.ceil(rec.gpu_hours))


def request_form_url(row: NodeType, rec: Recommendation, data_sensitivity: str) -> str:
    """The request form pre-filled for this option: GPU-hours rounded up, trial if within cap."""
    params = {"facility": row.facility.slug, "node_type": row.name}
    hours = request_gpu_hours(rec)
    if hours is not None:
        params["kind"] = "trial" if hours <= row.facility.trial_gpu_hours_cap else "full"
        params["gpu_hours"] = str(hours)
    params["data_sensitivity"] = data_sensitivity
    return f"{reverse('request-new')}?{urlencode(params)}"


@dataclass(frozen=True)
class Outcome:
    """A validated request, the ranked options as JSON-ready dicts, and the Pareto front."""

    request: WorkloadRequest
    results: list[dict[str, Any]]
    pareto: list[dict[str, Any]]
    inputs: RecommenderInputs

    def as_dict(self) -> dict[str, Any]:
        req = dataclasses.asdict(self.request)
        req["needs"] = list(self.request.needs)
        return {"results": self.results, "pareto": self.pareto, "request": req}


def _result_dict(rec: Recommendation, row: NodeType, req: WorkloadRequest) -> dict[str, Any]:
    d = rec.as_dict()
    note = connection_note(row.facility)
    d.update(
        node_type=row.name,
        node_type_id=row.pk,
        facility_name=row.facility.name,
        connected=not note,
        connection_note=note,
        request_url=request_form_url(row, rec, req.data_sensitivity),
        request_gpu_hours=request_gpu_hours(rec),
    )
    return d


class RecommendationRefused(Invalid):
    """A workload description the recommender cannot rank (HTTP 400, per field). The recommender
    itself imports no Django, so its RecommendationInputError is put in the domain's vocabulary
    here."""


def recommendations_for(
    *, data: Mapping[str, Any], inputs: RecommenderInputs | None = None
) -> Outcome:
    """Rank every active node type for the workload described by untrusted `data`.

    Raises RecommendationRefused (HTTP 400, per-field messages listing what is allowed) for
    bad input. Reads only; three queries when `inputs` is not given, none when it is.
    """
    inputs = inputs or recommender_inputs()
    try:
        req = parse_request(data, inputs.workloads)
    except RecommendationInputError as error:  # the pure recommender's error, in the domain's words
        raise RecommendationRefused(error.errors) from None
    ranked = recommend(req, inputs.workloads, inputs.nodes, inputs.records)
    results = [_result_dict(r, inputs.rows[r.node_type], req) for r in ranked]
    front = sorted((d for d in results if d["pareto"]), key=lambda d: d["predicted_hours"])
    pareto = [
        {
            k: d[k]
            for k in ("facility", "node_type", "node_type_id", "predicted_hours", "cost", "rank")
        }
        for d in front
    ]
    return Outcome(request=req, results=results, pareto=pareto, inputs=inputs)


def throughput_by_precision(outcome: Outcome) -> dict[str, dict[str, float]]:
    """Predicted samples/s per precision per node type for the outcome's workload.

    Precisions the hardware lacks are left out. Runs the recommender once per precision on
    the already loaded inputs (no queries).
    """
    out: dict[str, dict[str, float]] = {}
    for precision in PRECISIONS:
        req = dataclasses.replace(outcome.request, precision=precision)
        ranked = recommend(
            req, outcome.inputs.workloads, outcome.inputs.nodes, outcome.inputs.records
        )
        out[precision] = {r.node_type: r.throughput for r in ranked if r.throughput is not None}
    return out


# --- Scaling with GPU count --------------------------------------------------------------------
SCALING_ROWS_LIMIT = 5000


def scaling_series(results: QuerySet[BenchmarkResult]) -> list[dict[str, Any]]:
    """Configurations measured at two or more GPU counts: throughput against GPUs.

    One query, at most SCALING_ROWS_LIMIT rows. A configuration is everything but the GPU
    count (node type, workload, precision, strategy, batch, size); several results at one
    count keep the most recent.
    """
    fields = (
        "node_type__name",
        "node_type__facility__slug",
        "workload__key",
        "precision",
        "strategy",
        "batch_size",
        "image_size",
        "gpus",
        "throughput",
    )
    rows = results.order_by("created_at").values_list(*fields)[:SCALING_ROWS_LIMIT]
    groups: dict[tuple, dict[int, float]] = {}
    for *config, gpus, throughput in rows:
        groups.setdefault(tuple(config), {})[gpus] = throughput
    out = []
    for c, points in sorted(groups.items()):
        if len(points) >= 2:
            gpus = sorted(points)
            out.append(
                {
                    "label": f"{c[0]} · {c[2]} · {c[3]} · {c[4]} · batch {c[5]} · size {c[6]}",
                    "gpus": gpus,
                    "throughput": [points[g] for g in gpus],
                    "points": [(g, points[g]) for g in gpus],
                }
            )
    return out
