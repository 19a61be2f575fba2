"""Will the training fit in accelerator memory? A per-GPU estimate, per strategy, with reasons.

Model (bytes per GPU):
  states      = parameters x 16 (fp32: weights 4 + gradients 4 + Adam's two moments 8;
                fp16/bf16: weights 2 + gradients 2 + fp32 master weights 4 + Adam 8),
                divided by the GPU count under FSDP / DeepSpeed ZeRO-3 (sharded), whole under
                single and DDP (replicated);
  activations = activation bytes per sample (profiled, fp32, scaled by pixels/voxels/tokens)
                x per-GPU batch size x 0.5 under fp16/bf16 autocast;
  total       = (states + activations) x strategy overhead + 0.75 GiB workspace
                (CUDA context, cuBLAS/cuDNN workspaces, allocator fragmentation).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from benchmarks.recommender.types import NodeTypeInfo, Workload, WorkloadRequest

GIB = 2**30
STATE_BYTES_PER_PARAM = {"fp32": 16, "tf32": 16, "fp16": 16, "bf16": 16}
ACTIVATION_FACTOR = {"fp32": 1.0, "tf32": 1.0, "fp16": 0.5, "bf16": 0.5}
# FSDP gathers a whole unit's parameters before using it and fragments more; ZeRO-3 prefetches
# less (the seed: "DeepSpeed Stage 3 more memory-efficient for largest models").
OVERHEAD = {"single": 1.05, "ddp": 1.10, "fsdp": 1.15, "deepspeed": 1.05}
WORKSPACE_BYTES = 0.75 * GIB
SHARDED = ("fsdp", "deepspeed")


@dataclass(frozen=True)
class MemoryEstimate:
    """Per-GPU memory need, in GiB, and whether it fits the node type's accelerator."""

    strategy: str
    states_gb: float
    activations_gb: float
    total_gb: float
    capacity_gb: float
    measured: bool = False

    @property
    def fits(self) -> bool:
        return self.total_gb <= self.capacity_gb


def estimate(
    workload: Workload, req: WorkloadRequest, node: NodeTypeInfo, strategy: str
) -> MemoryEstimate:
    """Per-GPU memory of training `workload` as `req` asks, under `strategy`, on `node`."""
    states: float = workload.parameters * STATE_BYTES_PER_PARAM[req.precision]
    if strategy in SHARDED:
        states /= req.gpus
    acts = (
        workload.activation_bytes_per_sample
        * workload.scale(req.image_size)
        * req.batch_size
        * ACTIVATION_FACTOR[req.precision]
    )
    total = (states + acts) * OVERHEAD[strategy] + WORKSPACE_BYTES
    return MemoryEstimate(strategy, states / GIB, acts / GIB, total / GIB, node.memory_gb)


def candidate_strategies(req: WorkloadRequest) -> tuple[str, ...]:
    """Strategies to try, fastest first (the seed: FSDP faster than DeepSpeed)."""
    if req.strategy != "auto":
        return (req.strategy,)
    return ("single",) if req.gpus == 1 else ("ddp", "fsdp", "deepspeed")


def choose(workload: Workload, req: WorkloadRequest, node: NodeTypeInfo) -> MemoryEstimate:
    """The first candidate strategy that fits, else the candidate needing least memory."""
    estimates = [estimate(workload, req, node, s) for s in candidate_strategies(req)]
    for e in estimates:
        if e.fits:
            return e
    return min(estimates, key=lambda e: e.total_gb)


def min_sharded_gpus(workload: Workload, req: WorkloadRequest, node: NodeTypeInfo) -> int | None:
    """Fewest GPUs (a power of two, up to 1024) on which ZeRO-3 sharding would fit; None if the
    activations alone do not fit (then only a smaller batch helps)."""
    for k in range(11):
        gpus = 2**k
        trial = WorkloadRequest(**{**req.__dict__, "gpus": gpus})
        if estimate(workload, trial, node, "deepspeed").fits:
            return gpus
    return None


def with_measurement(mem: MemoryEstimate, peak_gb: float) -> MemoryEstimate:
    """Replace the estimate's total by a measured peak (max_memory_allocated) plus workspace,
    which the allocator's count leaves out."""
    return replace(mem, total_gb=peak_gb + WORKSPACE_BYTES / GIB, measured=True)


def explain(
    workload: Workload, req: WorkloadRequest, node: NodeTypeInfo, mem: MemoryEstimate
) -> str:
    """One sentence on the memory verdict, with the numbers behind it."""
    share = " per GPU after sharding" if mem.strategy in SHARDED else ""
    head = (
        f"needs about {mem.total_gb:.1f} GB per GPU ({workload.parameters / 1e9:.2f} B "
        f"parameters -> {mem.states_gb:.1f} GB of weights, gradients and Adam state{share}; "
        f"activations {mem.activations_gb:.1f} GB at batch {req.batch_size})"
    )
    if mem.measured:
        head = (
            f"needs about {mem.total_gb:.1f} GB per GPU (measured peak for this exact "
            f"configuration, plus workspace; the estimate was "
            f"{mem.states_gb + mem.activations_gb:.1f} GB before overheads)"
        )
    if mem.fits:
        return f"Fits with {mem.strategy}: {head} of {node.memory_gb:g} GB."
    hint = ""
    need = min_sharded_gpus(workload, req, node)
    if need is None:
        hint = "; even fully sharded the activations do not fit: lower the batch size"
    elif need > req.gpus:
        hint = f"; with FSDP or DeepSpeed ZeRO-3 it would fit on {need} or more GPUs"
    elif mem.strategy not in SHARDED:
        hint = "; choose FSDP or DeepSpeed ZeRO-3 to shard it"
    return f"Does not fit in {node.memory_gb:g} GB with {mem.strategy}: {head}{hint}."
