"""The catalogue as plain data: workloads, facilities, node types, published and measured results.

No Django: `seed_demo` loads these into the database, the recommender's benchmark and tests use
them directly. Keys (workload keys, node type names as in the Turing seed) are stable.
Money is US dollars; memory is GiB ("GB" on GPU datasheets).

This module is the catalogue's one address: the data lives by theme in `catalogue_sources`
(shared citations), `catalogue_workloads`, `catalogue_hardware` (facilities, node types, dense
peaks) and `catalogue_results` (published and measured), re-exported here; what combines them
(the recommender's node type inputs, all results) is defined here.
"""

from __future__ import annotations

from benchmarks.catalogue_hardware import (
    AMD_MI100,
    AMD_MI210,
    CPU_PEAK,
    DENSE_PEAKS,
    FACILITIES,
    INTEL_MAX1550,
    NODE_TYPES,
    NVIDIA_A10,
    NVIDIA_A100,
    NVIDIA_H100_PCIE,
    NVIDIA_H100_SXM,
    NVIDIA_H200,
    NVIDIA_V100,
    REFERENCE_FACILITY,
    REFERENCE_NODE_TYPES,
    NodeTypeSpec,
)
from benchmarks.catalogue_results import MEASURED_RESULTS, PUBLISHED_RESULTS, REFERENCE_RESULTS
from benchmarks.catalogue_sources import (
    AWS_PRICES,
    LAMBDA,
    LAMBDA_V2,
    LOCAL_VM,
    NVIDIA_DLE,
    SEED_004,
)
from benchmarks.catalogue_workloads import GPT_SEQUENCE_LENGTH, WORKLOADS
from benchmarks.recommender.types import BenchmarkRecord, NodeTypeInfo, Workload

__all__ = [
    "AMD_MI100",
    "AMD_MI210",
    "AWS_PRICES",
    "CPU_PEAK",
    "DENSE_PEAKS",
    "FACILITIES",
    "GPT_SEQUENCE_LENGTH",
    "INTEL_MAX1550",
    "LAMBDA",
    "LAMBDA_V2",
    "LOCAL_VM",
    "MEASURED_RESULTS",
    "NODE_TYPES",
    "NVIDIA_A10",
    "NVIDIA_A100",
    "NVIDIA_DLE",
    "NVIDIA_H100_PCIE",
    "NVIDIA_H100_SXM",
    "NVIDIA_H200",
    "NVIDIA_V100",
    "PUBLISHED_RESULTS",
    "REFERENCE_FACILITY",
    "REFERENCE_NODE_TYPES",
    "REFERENCE_RESULTS",
    "SEED_004",
    "WORKLOADS",
    "BenchmarkRecord",
    "NodeTypeInfo",
    "NodeTypeSpec",
    "Workload",
    "all_results",
    "node_type_info",
    "node_type_infos",
]


def node_type_info(spec: NodeTypeSpec, facility: dict) -> NodeTypeInfo:
    """Merge a node type with its facility's policy into the recommender's input."""
    return NodeTypeInfo(
        name=spec.name,
        facility=facility["slug"],
        kind=facility["kind"],
        accelerator=spec.accelerator,
        memory_gb=spec.memory_gb,
        accelerators_per_node=spec.accelerators_per_node,
        peak_tflops=spec.peak_tflops,
        allowed_sensitivity=tuple(facility["allowed_sensitivity"]),
        notebooks=facility["notebooks"],
        root=facility["root"],
        public_web_service=facility["public_web_service"],
        gpu_hour_rate=facility["gpu_hour_rate"],
        price_on_demand=spec.price_on_demand,
        price_spot=spec.price_spot,
        max_accelerators=spec.max_accelerators,
        device=spec.device,
    )


def node_type_infos(include_reference: bool = False) -> list[NodeTypeInfo]:
    """All catalogue node types as recommender inputs (plus reference hardware if asked)."""
    facilities = {f["slug"]: f for f in FACILITIES + [REFERENCE_FACILITY]}
    specs = NODE_TYPES + (REFERENCE_NODE_TYPES if include_reference else [])
    return [node_type_info(s, facilities[s.facility]) for s in specs]


def all_results(include_reference: bool = False) -> list[BenchmarkRecord]:
    """Published and locally measured results (plus reference hardware if asked)."""
    extra = REFERENCE_RESULTS if include_reference else []
    return PUBLISHED_RESULTS + MEASURED_RESULTS + extra
