"""Rank every node type for a workload: memory fit, predicted time, GPU-hours, cost, policy."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable

from benchmarks.recommender import memory
from benchmarks.recommender.predict import ResultIndex, effective_peak, predict, resolve_precision
from benchmarks.recommender.types import (
    NodeTypeInfo,
    Recommendation,
    Workload,
    WorkloadRequest,
    fmt_number,
)

#: How a row's refusal reasons begin (the page shows them apart from the other reasons).
REFUSED = "Not eligible: "


def _costs(
    req: WorkloadRequest, node: NodeTypeInfo, hours: float
) -> tuple[float | None, float | None, str]:
    """(cost, cost on demand, note). Cloud bills whole instances; HPC bills GPU-hours."""
    if node.kind == "cloud":
        instances = math.ceil(req.gpus / node.accelerators_per_node)
        od = node.price_on_demand * instances * hours if node.price_on_demand is not None else None
        spot = node.price_spot * instances * hours if node.price_spot is not None else None
        note = ""
        if instances * node.accelerators_per_node > req.gpus:
            note = (
                f"{node.name} comes with {node.accelerators_per_node} GPUs per instance; "
                f"you pay for {instances * node.accelerators_per_node}, use {req.gpus}"
            )
        return (spot if spot is not None else od), od, note
    cost = node.gpu_hour_rate * req.gpus * hours
    return cost, cost, ""


def _policy(req: WorkloadRequest, node: NodeTypeInfo) -> list[str]:
    """Reasons the facility's policy or hardware refuses this request (empty: allowed)."""
    out = []
    if req.data_sensitivity not in node.allowed_sensitivity:
        out.append(
            f"{node.facility} does not accept {req.data_sensitivity} data "
            f"(accepts {', '.join(node.allowed_sensitivity)})"
        )
    offers = {
        "notebooks": node.notebooks,
        "root": node.root,
        "public_web_service": node.public_web_service,
    }
    labels = {
        "notebooks": "notebooks",
        "root": "root access",
        "public_web_service": "a public web service",
    }
    out += [f"{node.facility} does not offer {labels[n]}" for n in req.needs if not offers[n]]
    if effective_peak(node, req.precision) is None:
        out.append(
            f"{node.accelerator} has no {req.precision} support "
            f"(the catalogue lists no {req.precision} speed for it)"
        )
    if node.max_accelerators is not None and req.gpus > node.max_accelerators:
        out.append(f"{node.name} offers at most {node.max_accelerators} accelerator(s)")
    return out


def _limits(req: WorkloadRequest, rec: Recommendation) -> list[str]:
    out = []
    if req.budget is not None and rec.cost is not None and rec.cost > req.budget:
        out.append(f"costs about {rec.cost:,.2f}, over the budget of {req.budget:,.2f}")
    if (
        req.deadline_hours is not None
        and rec.predicted_hours is not None
        and rec.predicted_hours > req.deadline_hours
    ):
        out.append(
            f"takes about {rec.predicted_hours:,.1f} h, past the deadline of "
            f"{req.deadline_hours:,.1f} h"
        )
    return out


def assess(
    index: ResultIndex, workload: Workload, req: WorkloadRequest, node: NodeTypeInfo
) -> Recommendation:
    """The full verdict for one node type (rank and Pareto flag are set by `recommend`)."""
    precision, why = _auto_from_runs_here(index, workload, req, node) or resolve_precision(
        node, req.precision
    )
    req = dataclasses.replace(req, precision=precision)
    rec = Recommendation(
        facility=node.facility,
        node_type=node.name,
        accelerator=node.accelerator,
        kind=node.kind,
        precision=precision,
    )
    if why:
        rec.reasons.append(why[0].upper() + why[1:] + ".")
    mem = memory.choose(workload, req, node)
    measured_peak = index.measured_peak_gb(node, workload, req, mem.strategy)
    if measured_peak is not None:
        mem = memory.with_measurement(mem, measured_peak)
    rec.strategy, rec.fits_memory = mem.strategy, mem.fits
    rec.memory_gb, rec.memory_capacity_gb = mem.total_gb, node.memory_gb
    rec.reasons.append(memory.explain(workload, req, node, mem))
    refusals = _policy(req, node)
    # Predict even where policy refuses, so people see what they are missing; only a precision
    # the hardware lacks makes a prediction meaningless.
    supported = effective_peak(node, req.precision) is not None
    found = predict(index, workload, req, node, mem.strategy) if supported else None
    if found is not None:
        rec.method, rec.confidence, rec.alike = found.method, found.confidence, found.alike
        rec.throughput = found.throughput
        rec.basis = (found.basis.id or found.basis.citation) if found.basis else ""
        rec.neighbour = (
            describe(found.basis, index.nodes.get(found.basis.node_type)) if found.basis else ""
        )
        rec.predicted_hours = req.dataset_samples * req.epochs / found.throughput / 3600
        rec.gpu_hours = rec.predicted_hours * req.gpus
        rec.cost, rec.cost_on_demand, note = _costs(req, node, rec.predicted_hours)
        rec.reasons.append(
            f"Predicted {fmt_number(found.throughput)} samples/s "
            f"({found.confidence} confidence): " + "; ".join(found.notes) + "."
        )
        if note:
            rec.reasons.append(note + ".")
    elif supported:
        rec.reasons.append("No benchmark result and no peak figure: cannot predict the time.")
    refusals += _limits(req, rec)
    rec.eligible = not refusals
    rec.reasons += [f"{REFUSED}{r}." for r in refusals]
    return rec


def _auto_from_runs_here(
    index: ResultIndex, workload: Workload, req: WorkloadRequest, node: NodeTypeInfo
) -> tuple[str, str] | None:
    """For `auto`, the precision that runs of this model on this very node type used, if any:
    what the trainer really does here (a "GPU" node type whose jobs ran on CPU ran fp32)."""
    if req.precision != "auto":
        return None
    here = [
        r
        for r in index.by_hw_model.get((node.accelerator, workload.model, workload.dims), [])
        if r.node_type == node.name
    ]
    if not here:
        return None
    runs = [r for r in here if r.source == "job"] or here
    counts: dict[str, int] = {}
    for r in runs:
        counts[r.precision] = counts.get(r.precision, 0) + 1
    precision = max(sorted(counts), key=lambda p: counts[p])
    return precision, (
        f"auto: {precision}, the precision that {workload.model} ran at on "
        f"{node.name} ({len(runs)} result{'s' if len(runs) != 1 else ''} here)"
    )


def describe(r, node: NodeTypeInfo | None = None) -> str:
    """One line naming a benchmark result: what, where, how fast, and where it comes from. On a
    CPU node type (`node.device`) its accelerators are CPUs, and it says so."""
    where = r.citation.split(",")[0] if r.source == "published" else f"{r.source} here"
    one = "CPU" if node is not None and node.device == "cpu" else "GPU"
    return (
        f"{r.model} {r.dims}D {r.image_size}px on {r.node_type}, {r.precision}, {r.gpus} {one}"
        f"{'' if r.gpus == 1 else 's'}, "
        f"batch {r.batch_size}: {fmt_number(r.throughput)} samples/s ({where})"
    )


def pareto_front(recs: Iterable[Recommendation]) -> list[Recommendation]:
    """Usable options that no other usable option beats on both time and cost.

    Usable: eligible, fitting, with a prediction. Sorted by time; among equal points the first
    is kept, so the front holds no duplicates.
    """
    pts = sorted(
        (
            r
            for r in recs
            if r.eligible and r.fits_memory and r.cost is not None and r.predicted_hours is not None
        ),
        key=lambda r: (r.predicted_hours, r.cost),
    )
    front: list[Recommendation] = []
    best_cost = math.inf
    for r in pts:
        if r.cost < best_cost:  # type: ignore[operator]
            front.append(r)
            best_cost = r.cost  # type: ignore[assignment]
    return front


def _rank_key(r: Recommendation) -> tuple:
    usable = r.eligible and r.fits_memory
    return (
        not usable,
        r.predicted_hours is None,
        r.predicted_hours or 0.0,
        r.cost if r.cost is not None else math.inf,
        r.node_type,
    )


def recommend(
    req: WorkloadRequest,
    workloads: Iterable[Workload],
    nodes: Iterable[NodeTypeInfo],
    results: Iterable,
) -> list[Recommendation]:
    """Assess every node type and return them ranked, best first.

    Rank order: eligible and fitting first, then by predicted time, ties by cost; options with
    no prediction last within their group. `pareto` marks the time/cost Pareto front.
    """
    workloads, nodes = list(workloads), list(nodes)
    index = ResultIndex(results, nodes, workloads)
    workload = index.workloads[(req.model, req.dims)]
    recs = sorted((assess(index, workload, req, n) for n in nodes), key=_rank_key)
    for i, r in enumerate(recs, start=1):
        r.rank = i
    for r in pareto_front(recs):
        r.pareto = True
    return recs
