"""Demo benchmark data from `benchmarks.catalogue`: workloads, published results with their
citations, the locally measured CPU results with their provenance, and the node types enriched
where the catalogue knows more than `allocations.demo` (TF32 peaks, prices, CPU figures).

Called by `manage.py seed_demo` after `allocations.demo.seed_catalogue()`; idempotent.
"""

from __future__ import annotations

import dataclasses
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import Group
from django.db import transaction

from allocations.models import Facility, NodeType
from benchmarks import catalogue
from benchmarks.catalogue import NodeTypeSpec
from benchmarks.models import BENCHMARKERS_GROUP, BenchmarkResult, Workload
from benchmarks.recommender import BenchmarkRecord

_PEAKS = ("fp16", "bf16", "fp32", "fp64", "tf32")


def _facility(spec: dict, *, active: bool) -> Facility:
    """The facility of that slug; created from the catalogue only if `allocations` lacks it."""
    return Facility.objects.get_or_create(
        slug=spec["slug"],
        defaults=dict(
            name=spec["name"],
            kind=spec["kind"],
            allowed_sensitivity=list(spec["allowed_sensitivity"]) or ["public"],
            offers_notebooks=spec["notebooks"],
            offers_root=spec["root"],
            offers_public_web=spec["public_web_service"],
            gpu_hour_rate=Decimal(str(spec["gpu_hour_rate"])),
            is_active=active,
        ),
    )[0]


def _missing(value: object) -> bool:
    return value is None or value == "" or value == 0


def enrich_node_type(spec: NodeTypeSpec, facility: Facility) -> NodeType:
    """Create the node type from the catalogue, or fill in what the row lacks.

    Values the row already has are never overwritten (the database is the source at run
    time): peaks, prices, memory and limits are filled only where empty; the accelerator name
    is replaced only by a more specific one ("NVIDIA H100" -> "NVIDIA H100 PCIe"), which keeps
    results of different chips apart. tests/benchmarks/test_seed_catalogue.py checks that
    what remains agrees with the catalogue.
    """
    wanted: dict[str, Any] = {f"peak_tflops_{p}": spec.peak_tflops.get(p) for p in _PEAKS}
    wanted.update(
        accelerator_memory_gb=Decimal(str(spec.memory_gb)),
        device=spec.device,
        max_accelerators=spec.max_accelerators,
        instance_type=spec.instance_type,
        interconnect=spec.interface,
        accelerators_per_node=spec.accelerators_per_node,
    )
    for price in ("price_on_demand", "price_spot"):
        value = getattr(spec, price)
        wanted[price] = None if value is None else Decimal(str(value))
    row = NodeType.objects.filter(facility=facility, name=spec.name).first()
    if row is None:
        return NodeType.objects.create(
            facility=facility, name=spec.name, accelerator=spec.accelerator, **wanted
        )
    changed = [f for f, v in wanted.items() if v is not None and _missing(getattr(row, f))]
    for f in changed:
        setattr(row, f, wanted[f])
    if spec.accelerator != row.accelerator and spec.accelerator.startswith(row.accelerator):
        row.accelerator = spec.accelerator
        changed.append("accelerator")
    if changed:
        row.save(update_fields=changed)
    return row


def _workload(w: catalogue.Workload) -> Workload:
    fields = {f.name: getattr(w, f.name) for f in dataclasses.fields(w) if f.name != "key"}
    return Workload.objects.update_or_create(key=w.key, defaults=fields)[0]


def _result(
    r: BenchmarkRecord, node: NodeType, workloads: dict[tuple[str, int], Workload]
) -> BenchmarkResult:
    fields = dict(
        node_type=node,
        workload=workloads[(r.model, r.dims)],
        image_size=r.image_size,
        precision=r.precision,
        strategy=r.strategy,
        gpus=r.gpus,
        batch_size=r.batch_size,
        throughput=r.throughput,
        throughput_min=r.throughput_min,
        throughput_max=r.throughput_max,
        peak_memory_gb=r.peak_memory_gb,
        source=r.source,
        citation=r.citation,
    )
    if r.source == "measured":
        fields.update(
            repeats=5,
            software={"python": "3.11.7", "torch": "2.13.0+cpu", "monai": "1.6.1", "threads": 1},
            notes="python -m benchmarks.harness run --device cpu --repeats 5 "
            "--warmup 2 --steps 2 --threads 1",
        )
    return BenchmarkResult.objects.update_or_create(catalogue_key=r.id, defaults=fields)[0]


@transaction.atomic
def seed() -> dict[str, int]:
    """Load the catalogue's workloads and results and enrich node types; safe to re-run.

    The published reference hardware (the H200 used for calibration) goes under an inactive
    facility: stored and browsable, never offered by the recommender or the request form.
    """
    Group.objects.get_or_create(name=BENCHMARKERS_GROUP)
    workloads = {(w.model, w.dims): _workload(w) for w in catalogue.WORKLOADS}
    facilities = {f["slug"]: _facility(f, active=True) for f in catalogue.FACILITIES}
    facilities["published-reference"] = _facility(catalogue.REFERENCE_FACILITY, active=False)
    nodes = {
        (s.facility, s.name): enrich_node_type(s, facilities[s.facility])
        for s in catalogue.NODE_TYPES + catalogue.REFERENCE_NODE_TYPES
    }
    by_name = {name: node for (_, name), node in nodes.items()}
    results = [
        _result(r, by_name[r.node_type], workloads)
        for r in catalogue.all_results(include_reference=True)
    ]
    return {"workloads": len(workloads), "node_types": len(nodes), "results": len(results)}
