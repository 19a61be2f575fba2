"""How long a CT/X-ray training job will take on a node type: the recommender asked at launch.

`job_prediction(node_type=..., params=..., gpus=...)` answers with a `JobPrediction`:
  source "measured"     a benchmark result for this model on this very node type is the basis
                        (a harness run, a published figure, or an earlier job measured back);
  source "recommender"  predicted from other results (same chip, other models, or the roofline);
  source "wall-time"    no basis (no node type, a model without a profile, a dataset of unknown
                        size, no result and no peak figure): `hours` is None and `basis` says why.

The launcher (`launcher/estimates.py`) turns it into the GPU-hours it reserves, never more than
the wall time. Reads only: three queries (the recommender's inputs).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from allocations.models import NodeType
from allocations.units import unit_of
from benchmarks.models import BenchmarkResult
from benchmarks.recommender import WorkloadRequest
from benchmarks.recommender.core import assess
from benchmarks.recommender.predict import ResultIndex
from benchmarks.recommender.robust import faster_half_median
from benchmarks.recommender.types import fmt_number
from benchmarks.selectors import recommender_inputs

# Until jobs on a node type have been measured: a stated allowance for what a run spends
# outside its training steps (two Python starts importing torch and MONAI, data synthesis,
# model build, the final evaluation). Once jobs there succeeded, the median of what they
# really spent outside training (`overhead_seconds`, last OVERHEAD_SAMPLE jobs) replaces it.
STARTUP_SECONDS = 30.0
OVERHEAD_SAMPLE = 50
# A validation or test image costs one forward pass: about a third of a training step.
FORWARD_SHARE = 1 / 3
# The trainer's defaults (launcher/workloads/ctxray/config.py) for what a job leaves out.
TRAINER_DEFAULTS = {"epochs": 50, "batch_size": 16, "size": 224, "dims": 2, "folds": 1}
VAL_FRACTION = 0.2  # the trainer's holdout when folds == 1
SYNTHETIC_DATASETS = ("synthetic-ct", "synthetic-xray")
SYNTHETIC_DEFAULT_N = 24  # launcher/bundles.py: data_spec


@dataclass(frozen=True)
class JobPrediction:
    """One run's predicted wall time on a node type, with what it rests on."""

    source: str  # measured | recommender | wall-time
    basis: str  # a sentence a user can check
    hours: float | None = None  # wall hours of one run
    gpu_hours: float | None = None
    images_per_s: float | None = None  # training throughput over all GPUs
    precision: str = ""
    method: str = ""  # the recommender's method: measured | flops_scaled | roofline
    confidence: str = ""  # high | medium | low
    neighbour: str = ""  # the benchmark result it rests on, in words
    # Whether the run fits the accelerator's memory (the recommender's memory model, or a
    # measured peak), with its sentence; None when the recommender was not reached.
    fits_memory: bool | None = None
    memory: str = ""


@dataclass(frozen=True)
class JobShape:
    """What a job's params mean for its cost: images per epoch and the network."""

    model: str
    dims: int
    size: int
    batch_size: int
    epochs: int
    train_images: int
    eval_images: int  # validated once per epoch


def job_shape(params: Mapping[str, Any], gpus: int) -> JobShape | str:
    """The job's shape, or a sentence saying why its size is unknown."""
    p = {**TRAINER_DEFAULTS, **{k: v for k, v in params.items() if v is not None}}
    dataset = p.get("dataset", "synthetic-ct")
    if dataset not in SYNTHETIC_DATASETS:
        return (
            f"the portal does not know how many images {dataset} holds, so it cannot turn "
            "a throughput into hours"
        )
    n = int(p.get("synthetic_n") or SYNTHETIC_DEFAULT_N)
    folds = int(p["folds"])
    held_out = 1 / folds if folds > 1 else VAL_FRACTION
    train = n - round(n * held_out)
    batch, world = int(p["batch_size"]), max(1, gpus)
    steps = (-(-train // world)) // batch  # full batches per rank, as the trainer runs them
    return JobShape(
        model=str(p.get("model", "densenet121")),
        dims=int(p["dims"]),
        size=int(p["size"]),
        batch_size=batch,
        epochs=int(p["epochs"]),
        train_images=steps * batch * world,
        eval_images=n - train,
    )


def _node_name(node_type: NodeType, rows: Mapping[str, NodeType]) -> str | None:
    return next((name for name, row in rows.items() if row.pk == node_type.pk), None)


def job_prediction(
    *, node_type: NodeType | None, params: Mapping[str, Any], gpus: int
) -> JobPrediction:
    """Predict one run of a training job with `params` on `gpus` GPUs of `node_type`.

    Never raises for missing data: the answer's source is then "wall-time" and its basis says
    what was missing. Precision is `auto` (the trainer's bf16 autocast on CUDA; fp32 on CPU).
    """
    if node_type is None:
        return JobPrediction("wall-time", "the allocation names no node type")
    shape = job_shape(params, gpus)
    if isinstance(shape, str):
        return JobPrediction("wall-time", shape)
    inputs = recommender_inputs()
    workload = next(
        (w for w in inputs.workloads if (w.model, w.dims) == (shape.model, shape.dims)), None
    )
    if workload is None:
        return JobPrediction(
            "wall-time",
            f"no cost profile for {shape.model} ({shape.dims}D) in the benchmark catalogue",
        )
    name = _node_name(node_type, inputs.rows)
    node = next((n for n in inputs.nodes if n.name == name), None)
    if node is None:
        return JobPrediction("wall-time", f"{node_type.name} is not offered by an active facility")
    req = WorkloadRequest(
        model=shape.model,
        dims=shape.dims,
        image_size=shape.size,
        dataset_samples=1,
        epochs=1,
        precision="auto",
        gpus=max(1, gpus),
        batch_size=shape.batch_size,
        data_sensitivity="public",
        harness="job",
    )
    rec = assess(ResultIndex(inputs.records, inputs.nodes, inputs.workloads), workload, req, node)
    memory = next((r for r in rec.reasons if r.startswith(("Fits with", "Does not fit"))), "")
    if rec.throughput is None:
        return JobPrediction(
            "wall-time",
            f"no benchmark result and no peak figure for {node_type.name}: nothing to predict from",
            fits_memory=rec.fits_memory,
            memory=memory,
        )
    overhead, overhead_basis = _overhead(node_type, shape, rec.throughput)
    hours = (overhead + shape.epochs * shape.train_images / rec.throughput) / 3600
    here = rec.method == "measured" and any(
        r.node_type == name
        and (r.model, r.dims) == (shape.model, shape.dims)
        and (r.id == rec.basis or r.citation == rec.basis)
        for r in inputs.records
    )
    source = "measured" if here else "recommender"
    basis = (
        f"{fmt_number(rec.throughput)} images/s ({rec.method}, {rec.confidence} confidence"
        + (
            f"; the median of the faster half of {rec.alike} runs of this shape here, a slower "
            "run being taken as a loaded machine"
            if rec.alike
            else ""
        )
        + f") for {shape.model} {shape.dims}D {shape.size}px at {rec.precision}, batch "
        f"{shape.batch_size}, {unit_of([node_type]).count(max(1, gpus))}, x {shape.epochs} "
        f"epochs of {shape.train_images} training images, plus {overhead_basis}"
    )
    return JobPrediction(
        source,
        basis,
        hours=hours,
        gpu_hours=hours * max(1, gpus),
        images_per_s=rec.throughput,
        precision=rec.precision,
        method=rec.method,
        confidence=rec.confidence,
        neighbour=rec.neighbour,
        fits_memory=rec.fits_memory,
        memory=memory,
    )


def _overhead(node_type: NodeType, shape: JobShape, throughput: float) -> tuple[float, str]:
    """Seconds a run spends outside its training steps, and how that figure was obtained."""
    seen = [
        s
        for s in BenchmarkResult.objects.filter(
            node_type=node_type, source=BenchmarkResult.Source.JOB, overhead_seconds__isnull=False
        )
        .order_by("-created_at")
        .values_list("overhead_seconds", flat=True)[:OVERHEAD_SAMPLE]
        if s is not None  # the query excludes nulls; this tells the type
    ]
    if seen:
        # Less is faster: the median of the quicker half (a loaded machine's start-up is not
        # the machine's).
        median = faster_half_median(seen, key=lambda s: -s)
        return median, (
            f"{median:,.0f} s outside training (start-up, validation, evaluation: "
            f"the median of the quicker half of {len(seen)} measured "
            f"job{'s' if len(seen) != 1 else ''} here)"
        )
    evals = (shape.epochs + 1) * shape.eval_images * FORWARD_SHARE / throughput
    return STARTUP_SECONDS + evals, (
        f"{STARTUP_SECONDS:g} s start-up (stated; no job measured "
        f"here yet) and {evals:,.1f} s of validation"
    )
