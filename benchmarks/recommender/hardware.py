"""What hardware and harness a figure belongs to: precision classes and dense peaks, `auto`
precision per chip, the work per sample that limits each device, and the harness a result came
from. Pure functions over the recommender's dataclasses (no Django)."""

from __future__ import annotations

from benchmarks.recommender.types import BenchmarkRecord, NodeTypeInfo, Workload


def precision_class(precision: str) -> str:
    """fp16 and bf16 share a class: tensor cores run both at one rate on NVIDIA since Ampere."""
    return "16bit" if precision in ("fp16", "bf16") else precision


def effective_peak(node: NodeTypeInfo, precision: str) -> float | None:
    """Peak TFLOP/s per accelerator at `precision`; TF32 falls back to fp32 where not listed."""
    if precision == "tf32":
        return node.peak_tflops.get("tf32") or node.peak_tflops.get("fp32")
    return node.peak_tflops.get(precision)


def resolve_precision(node: NodeTypeInfo, wanted: str) -> tuple[str, str]:
    """(precision to predict this node type at, a sentence saying why if it differs).

    `auto` means mixed precision where the hardware has it: bf16, else fp16; fp32 on a CPU
    (the CT/X-ray trainer autocasts only on CUDA). An explicit 16-bit precision the chip lacks
    becomes the other 16-bit precision (a V100 runs fp16 AMP for a bf16 request); anything
    else is kept, and `_policy` refuses it if the chip cannot run it.
    """
    has = {p: effective_peak(node, p) is not None for p in ("fp16", "bf16")}
    if wanted == "auto":
        if node.device == "cpu":
            return "fp32", "auto on a CPU: fp32 (the trainer autocasts only on CUDA GPUs)"
        if has["bf16"]:
            return "bf16", "auto: bf16 mixed precision"
        if has["fp16"]:
            return "fp16", (f"auto: fp16 mixed precision ({node.accelerator} has no bf16 units)")
        return "fp32", f"auto: fp32 ({node.accelerator} has no 16-bit units listed)"
    if wanted in has and not has[wanted]:
        other = "fp16" if wanted == "bf16" else "bf16"
        if has[other]:
            return other, (
                f"{node.accelerator} has no {wanted} units: predicted with {other} "
                "mixed precision, what you would run there"
            )
    return wanted, ""


def work_per_sample(workload: Workload, size: int, device: str) -> float:
    """What one training sample costs the hardware, in the unit that limits it.

    CPU: FLOPs (compute-bound; on our CPU DenseNet-121 reaches 0.9-1.35x ResNet-50's FLOP/s,
    so FLOPs carry over between architectures). GPU: bytes of activations saved for backward
    (profiled): mixed-precision CNN training reaches ~7% of tensor peak (REFERENCE.md), i.e. it
    is bound by memory traffic, and DenseNet's concatenations move 1.5x ResNet-50's bytes per
    sample while doing 0.69x its FLOPs. FLOPs-scaling ResNet-50 there would make DenseNet-121
    faster than ResNet-50, an upper bound and not a prediction.
    """
    if device == "cpu":
        return workload.flops(size)
    return workload.activation_bytes_per_sample * workload.scale(size)


def precision_compatible(node: NodeTypeInfo, wanted: str, measured: str) -> bool:
    """Can a result measured at `measured` stand for `wanted` on this node's hardware?"""
    if wanted == measured:
        return True
    if precision_class(wanted) == precision_class(measured) == "16bit":
        return effective_peak(node, wanted) == effective_peak(node, measured) is not None
    return False


def harness_of(r: BenchmarkRecord) -> str:
    """Which benchmark harness produced a result: "job" for the portal's own jobs, else the
    first part of its citation ("NVIDIA DeepLearningExamples", "Lambda deeplearning-benchmark
    v2", ...). Two harnesses on one chip can differ by 1.5x (a tuned DALI pipeline against
    plain PyTorch AMP), which is why a same-chip neighbour from another harness is corrected."""
    return "job" if r.source == "job" else r.citation.split(",")[0].strip()
