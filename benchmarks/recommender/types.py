"""Plain data the recommender works on: no Django, so the API, pages, seeding and benchmarks
can all feed it (from model rows or from `benchmarks.catalogue`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

PRECISIONS = ("fp32", "tf32", "fp16", "bf16")
# What a request may ask for: a precision, or `auto` (mixed precision where the hardware has
# it: bf16, else fp16; fp32 on CPUs), resolved per node type by predict.resolve_precision.
REQUEST_PRECISIONS = ("auto",) + PRECISIONS
STRATEGIES = ("single", "ddp", "fsdp", "deepspeed")
SENSITIVITY_TIERS = ("public", "internal", "personal", "special")
NEEDS = ("notebooks", "root", "public_web_service")
FACILITY_KINDS = ("hpc", "cloud", "local")


def fmt_number(x: float) -> str:
    """A number for a sentence: thousands separators, about three significant digits."""
    if abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:.1f}" if abs(x) >= 1 else f"{x:.3g}"


@dataclass(frozen=True)
class Workload:
    """A trainable model at one dimensionality, with its per-sample costs at `reference_size`.

    `reference_size` is pixels per side (dims 2: size^2, dims 3: size^3) or tokens per sample
    (dims 1). Costs grow linearly with pixels, voxels or tokens.
    """

    key: str
    model: str
    dims: int
    family: str  # "cnn" or "gpt"
    reference_size: int
    parameters: int
    train_flops_per_sample: float
    activation_bytes_per_sample: float  # saved for backward, fp32, at reference_size
    description: str = ""

    def scale(self, size: int) -> float:
        """How many times more work one sample at `size` is than at the reference size."""
        return (size / self.reference_size) ** self.dims

    def flops(self, size: int) -> float:
        """Training FLOPs (forward + backward) for one sample at `size`."""
        return self.train_flops_per_sample * self.scale(size)


@dataclass(frozen=True)
class NodeTypeInfo:
    """A node type with what the recommender needs of its facility.

    Prices are per node (instance) hour; `gpu_hour_rate` is the facility's charge per GPU-hour.
    `peak_tflops` maps precision (fp16, bf16, fp32, fp64, optionally tf32) to peak TFLOP/s per
    accelerator, None where the hardware has no such units (N/A in the seed table).
    """

    name: str
    facility: str
    kind: str
    accelerator: str
    memory_gb: float
    accelerators_per_node: int
    peak_tflops: Mapping[str, float | None]
    allowed_sensitivity: tuple[str, ...] = ("public",)
    notebooks: bool = False
    root: bool = False
    public_web_service: bool = False
    gpu_hour_rate: float = 0.0
    price_on_demand: float | None = None
    price_spot: float | None = None
    max_accelerators: int | None = None
    device: str = "gpu"  # "gpu" or "cpu": roofline fits never mix the two


@dataclass(frozen=True)
class BenchmarkRecord:
    """One benchmark result: throughput in samples/s over all `gpus` (median of repeats)."""

    node_type: str
    model: str
    dims: int
    image_size: int
    precision: str
    strategy: str
    gpus: int
    batch_size: int
    throughput: float
    throughput_min: float | None = None
    throughput_max: float | None = None
    peak_memory_gb: float | None = None
    source: str = "measured"
    citation: str = ""
    id: str = ""


@dataclass(frozen=True)
class WorkloadRequest:
    """A validated description of the training a researcher wants to run.

    `batch_size` is per GPU. `strategy` "auto" means: single on one GPU, else the fastest of
    DDP, FSDP, DeepSpeed ZeRO-3 that fits in memory.
    """

    model: str
    dims: int
    image_size: int
    dataset_samples: int
    epochs: float
    precision: str
    gpus: int
    batch_size: int
    data_sensitivity: str
    budget: float | None = None
    deadline_hours: float | None = None
    needs: tuple[str, ...] = ()
    strategy: str = "auto"
    # Whose measurement to predict: "job" (the portal's own trainer) at launch, a published
    # harness in leave-one-out; "" = no harness correction (see predict.harness_of).
    harness: str = ""


@dataclass
class Recommendation:
    """The verdict for one node type. Hours and money are None when no prediction was possible."""

    facility: str
    node_type: str
    accelerator: str
    kind: str
    rank: int = 0
    fits_memory: bool = False
    eligible: bool = False
    strategy: str = "single"
    method: str = "none"  # measured | flops_scaled | roofline | none
    precision: str = ""  # what the row was predicted at (auto and bf16-on-V100 resolved)
    confidence: str = "none"  # high | medium | low | none
    throughput: float | None = None
    predicted_hours: float | None = None
    gpu_hours: float | None = None
    cost: float | None = None
    cost_on_demand: float | None = None
    memory_gb: float = 0.0
    memory_capacity_gb: float = 0.0
    pareto: bool = False
    basis: str = ""  # id/citation of the benchmark result the prediction rests on
    neighbour: str = ""  # that result in words (for a roofline: the nearest calibration point)
    reasons: list[str] = field(default_factory=list)
    # How many of the portal's own runs of this shape the throughput is the faster-half median
    # of (robust.py; 0: not so). For the launch forms' sentence; not part of the API's row.
    alike: int = 0

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready dict. Hours and money stay as predicted, unrounded (the API writes hours as
        numbers and money as decimal strings: docs/api.md, "Figures"; pages round for display);
        throughput and memory are rounded."""
        d = asdict(self)
        d.pop("alike")
        if d["throughput"] is not None:
            d["throughput"] = round(d["throughput"], 3)
        d["memory_gb"] = round(d["memory_gb"], 2)
        return d
