"""Builders for the recommender tests: small, hand-made node types, results and requests."""

from __future__ import annotations

import dataclasses

from benchmarks.recommender import BenchmarkRecord, NodeTypeInfo, WorkloadRequest


def make_request(**overrides) -> WorkloadRequest:
    """densenet121 on 224x224 slices, 100k samples x 10 epochs, one GPU, public data."""
    base = dict(
        model="densenet121",
        dims=2,
        image_size=224,
        dataset_samples=100_000,
        epochs=10,
        precision="fp16",
        gpus=1,
        batch_size=32,
        data_sensitivity="public",
    )
    base.update(overrides)
    return WorkloadRequest(**base)


def make_node(name: str, **overrides) -> NodeTypeInfo:
    """An A100-80-like HPC node type, customisable."""
    base = dict(
        name=name,
        facility=f"fac-{name}",
        kind="hpc",
        accelerator=f"acc-{name}",
        memory_gb=80,
        accelerators_per_node=4,
        peak_tflops={"fp16": 312, "bf16": 312, "fp32": 19.5, "fp64": 9.7, "tf32": 156},
        allowed_sensitivity=("public", "internal"),
        gpu_hour_rate=1.0,
    )
    base.update(overrides)
    return NodeTypeInfo(**base)


def make_result(node: str, **overrides) -> BenchmarkRecord:
    """A single-GPU fp16 densenet121 2D result at 224, batch 32, 1000 samples/s."""
    base = dict(
        node_type=node,
        model="densenet121",
        dims=2,
        image_size=224,
        precision="fp16",
        strategy="single",
        gpus=1,
        batch_size=32,
        throughput=1000.0,
    )
    base.update(overrides)
    return BenchmarkRecord(**base)


def replace(obj, **changes):
    return dataclasses.replace(obj, **changes)
