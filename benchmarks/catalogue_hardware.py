"""The catalogue's hardware: facilities (their policy), node types (accelerator, memory, dense
peaks with their datasheet citations, cloud prices) and the documented dense peak of each chip.

No Django; `benchmarks.catalogue` re-exports every public name here. Node type names are those of
the Turing seed and stable. Money is US dollars; memory is GiB ("GB" on GPU datasheets).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from benchmarks.catalogue_sources import AWS_PRICES, SEED_004

# --- Facilities ------------------------------------------------------------------------------
# Policy values are illustrative for the demo (the real ones belong to each service); charge
# rates are notional internal recharge rates in USD per GPU-hour, not published prices.
FACILITIES: list[dict] = [
    dict(
        slug="jade2",
        name="JADE 2",
        kind="hpc",
        allowed_sensitivity=("public", "internal"),
        notebooks=False,
        root=False,
        public_web_service=False,
        gpu_hour_rate=0.60,
    ),
    dict(
        slug="baskerville",
        name="Baskerville",
        kind="hpc",
        allowed_sensitivity=("public", "internal"),
        notebooks=True,
        root=False,
        public_web_service=False,
        gpu_hour_rate=1.20,
    ),
    dict(
        slug="stanage",
        name="Stanage",
        kind="hpc",
        allowed_sensitivity=("public", "internal"),
        notebooks=True,
        root=False,
        public_web_service=False,
        gpu_hour_rate=1.80,
    ),
    dict(
        slug="cosma8",
        name="COSMA8",
        kind="hpc",
        allowed_sensitivity=("public",),
        notebooks=False,
        root=False,
        public_web_service=False,
        gpu_hour_rate=0.80,
    ),
    dict(
        slug="dawn",
        name="Dawn",
        kind="hpc",
        allowed_sensitivity=("public", "internal"),
        notebooks=True,
        root=False,
        public_web_service=False,
        gpu_hour_rate=1.00,
    ),
    dict(
        slug="aws-spot",
        name="AWS GPU cluster (us-east-1)",
        kind="cloud",
        allowed_sensitivity=("public", "internal", "personal"),
        notebooks=True,
        root=True,
        public_web_service=True,
        gpu_hour_rate=0.0,
    ),
    dict(
        slug="local",
        name="Local compute (this machine)",
        kind="local",
        allowed_sensitivity=("public", "internal", "personal", "special"),
        notebooks=True,
        root=True,
        public_web_service=False,
        gpu_hour_rate=0.0,
    ),
]
# Published figures on hardware no facility here offers: used to calibrate and evaluate the
# recommender, not requestable. seed_demo may skip it or load it as a non-requestable facility.
REFERENCE_FACILITY = dict(
    slug="published-reference",
    name="Published reference hardware",
    kind="cloud",
    allowed_sensitivity=(),
    notebooks=False,
    root=False,
    public_web_service=False,
    gpu_hour_rate=0.0,
)


@dataclass(frozen=True)
class NodeTypeSpec:
    """A node type: accelerator, memory (GiB per accelerator), peaks (TFLOP/s per accelerator)."""

    name: str
    facility: str
    accelerator: str
    memory_gb: float
    accelerators_per_node: int
    interface: str
    launched: str  # YYYY-MM
    peak_tflops: dict[str, float | None] = field(hash=False)
    peak_source: str = SEED_004
    instance_type: str = ""
    price_on_demand: float | None = None  # USD per instance-hour
    price_spot: float | None = None
    price_source: str = ""
    max_accelerators: int | None = None
    device: str = "gpu"  # "cpu" for CPU-only node types


def _peaks(
    fp16: float | None,
    bf16: float | None,
    fp32: float,
    fp64: float | None,
    tf32: float | None = None,
) -> dict[str, float | None]:
    return {"fp16": fp16, "bf16": bf16, "fp32": fp32, "fp64": fp64, "tf32": tf32}


# Peaks are DENSE figures (no 2:4 structured sparsity, which doubles the datasheet number and
# no training run uses): tensor/matrix units for fp16/bf16/tf32, vector units for fp32/fp64.
# Each node type names its sources; tests/benchmarks/test_catalogue_peaks.py checks that no
# figure exceeds the documented dense peak of its chip (DENSE_PEAKS below).
NVIDIA_V100 = (
    "NVIDIA Tesla V100 datasheet (SXM2: 125 TFLOP/s tensor fp16, 15.7 fp32, 7.8 fp64; "
    "no bf16 or tf32 units); the seed's 31.33 fp16 is the non-tensor rate"
)
NVIDIA_A100 = (
    "NVIDIA A100 datasheet, dense: 312 TFLOP/s bf16/fp16 tensor, 156 tf32, 19.5 fp32, "
    "9.7 fp64 (the 624/312 figures are with sparsity)"
)
NVIDIA_H100_PCIE = (
    "NVIDIA H100 datasheet, PCIe column, dense: 756 TFLOP/s bf16/fp16, 378 tf32, "
    "51 fp32, 26 fp64; the seed's 1,513 is the with-sparsity figure"
)
NVIDIA_H100_SXM = (
    "NVIDIA H100 datasheet, SXM column, dense: 989 TFLOP/s bf16/fp16, 495 tf32, "
    "67 fp32, 34 fp64 (1,979/989 are with sparsity)"
)
NVIDIA_H200 = "NVIDIA H200 datasheet, dense: same tensor rates as the H100 SXM (989 bf16, 495 tf32)"
AMD_MI100 = (
    "AMD Instinct MI100 datasheet: 184.6 TFLOP/s fp16 matrix, 92.3 bf16 matrix, 23.1 fp32 "
    "vector, 11.5 fp64 vector (as the seed table); no tf32 units"
)
AMD_MI210 = (
    "AMD Instinct MI210 datasheet: 181 TFLOP/s fp16/bf16 matrix, 22.6 fp32 vector, 22.6 "
    "fp64 vector (as the seed table); no tf32 units"
)
INTEL_MAX1550 = (
    "Intel Data Center GPU Max 1550 (ark.intel.com 232873; Intel 'Max Series technical "
    "overview'): 128 Xe cores x 8 XMX engines at 1.6 GHz, no sparsity: 832 TFLOP/s "
    "bf16 and fp16 on XMX (the seed's 52.43 fp16 is the vector rate), 52.43 fp32 and "
    "fp64 vector; tf32 on XMX is half the 16-bit rate (416, derived)"
)
NVIDIA_A10 = (
    "NVIDIA A10 datasheet, dense: 125 TFLOP/s bf16/fp16 tensor, 62.5 tf32, 31.2 fp32. "
    "AWS's A10G is a variant with lower tensor and higher CUDA-core throughput than the A10 "
    "(Baseten, 'NVIDIA A10 vs A10G for ML model inference'); NVIDIA publishes no A10G "
    "datasheet, so the A10 figures are an upper bound here"
)
CPU_PEAK = "estimate from the CPU's vector width (2 vCPU x AVX-512 FMA x ~3 GHz)"

# Documented dense peaks per chip (TFLOP/s), the ceiling every catalogue figure must respect.
DENSE_PEAKS: dict[str, dict[str, float]] = {
    "NVIDIA V100 SXM2": {"fp16": 125, "fp32": 15.7, "fp64": 7.8},
    "NVIDIA A100 SXM4": {"fp16": 312, "bf16": 312, "tf32": 156, "fp32": 19.5, "fp64": 9.7},
    "NVIDIA H100 PCIe": {"fp16": 756, "bf16": 756, "tf32": 378, "fp32": 51, "fp64": 26},
    "NVIDIA H100 SXM5": {"fp16": 989, "bf16": 989, "tf32": 495, "fp32": 67, "fp64": 34},
    "NVIDIA H200 SXM": {"fp16": 989, "bf16": 989, "tf32": 495, "fp32": 67, "fp64": 34},
    "AMD MI100": {"fp16": 184.6, "bf16": 92.3, "fp32": 23.1, "fp64": 11.5},
    "AMD MI210": {"fp16": 181, "bf16": 181, "fp32": 22.6, "fp64": 22.6},
    "Intel Max 1550": {"fp16": 832, "bf16": 832, "tf32": 416, "fp32": 52.43, "fp64": 52.43},
    "NVIDIA A10G": {"fp16": 125, "bf16": 125, "tf32": 62.5, "fp32": 31.2, "fp64": 0.98},
}

NODE_TYPES: list[NodeTypeSpec] = [
    # HPC: names and memory from the seed's "HPC Systems" table; peaks dense, from datasheets.
    NodeTypeSpec(
        "J-V100-32",
        "jade2",
        "NVIDIA V100 SXM2",
        32,
        8,
        "SXM2",
        "2017-06",
        _peaks(125, None, 15.7, 7.8),
        NVIDIA_V100,
    ),
    NodeTypeSpec(
        "B-A100-40",
        "baskerville",
        "NVIDIA A100 SXM4",
        40,
        4,
        "SXM4",
        "2020-06",
        _peaks(312, 312, 19.5, 9.7, tf32=156),
        NVIDIA_A100,
    ),
    NodeTypeSpec(
        "B-A100-80",
        "baskerville",
        "NVIDIA A100 SXM4",
        80,
        4,
        "SXM4",
        "2020-06",
        _peaks(312, 312, 19.5, 9.7, tf32=156),
        NVIDIA_A100,
    ),
    NodeTypeSpec(
        "S-H100-80",
        "stanage",
        "NVIDIA H100 PCIe",
        80,
        4,
        "PCIe 4.0",
        "2023-03",
        _peaks(756, 756, 51, 26, tf32=378),
        NVIDIA_H100_PCIE,
    ),
    NodeTypeSpec(
        "C-MI100-32",
        "cosma8",
        "AMD MI100",
        32,
        4,
        "PCIe 4.0",
        "2020-11",
        _peaks(184.6, 92.3, 23.1, 11.5),
        AMD_MI100,
    ),
    NodeTypeSpec(
        "C-MI210-64",
        "cosma8",
        "AMD MI210",
        64,
        4,
        "PCIe 4.0",
        "2022-03",
        _peaks(181, 181, 22.6, 22.6),
        AMD_MI210,
    ),
    NodeTypeSpec(
        "D-MX1550-128",
        "dawn",
        "Intel Max 1550",
        128,
        4,
        "PCIe 5.0",
        "2023-03",
        _peaks(832, 832, 52.43, 52.43, tf32=416),
        INTEL_MAX1550,
    ),
    # Cloud: prices per instance.
    NodeTypeSpec(
        "g5.xlarge",
        "aws-spot",
        "NVIDIA A10G",
        24,
        1,
        "PCIe 4.0",
        "2021-11",
        _peaks(125, 125, 31.2, 0.98, tf32=62.5),
        NVIDIA_A10,
        "g5.xlarge",
        1.006,
        0.45,
        AWS_PRICES,
    ),
    NodeTypeSpec(
        "g5.12xlarge",
        "aws-spot",
        "NVIDIA A10G",
        24,
        4,
        "PCIe 4.0",
        "2021-11",
        _peaks(125, 125, 31.2, 0.98, tf32=62.5),
        NVIDIA_A10,
        "g5.12xlarge",
        5.672,
        2.30,
        AWS_PRICES,
    ),
    NodeTypeSpec(
        "p4d.24xlarge",
        "aws-spot",
        "NVIDIA A100 SXM4",
        40,
        8,
        "SXM4",
        "2020-11",
        _peaks(312, 312, 19.5, 9.7, tf32=156),
        NVIDIA_A100,
        "p4d.24xlarge",
        32.7726,
        12.00,
        AWS_PRICES,
    ),
    NodeTypeSpec(
        "p5.48xlarge",
        "aws-spot",
        "NVIDIA H100 SXM5",
        80,
        8,
        "SXM5",
        "2023-07",
        _peaks(989, 989, 67, 34, tf32=495),
        NVIDIA_H100_SXM,
        "p5.48xlarge",
        98.32,
        40.00,
        AWS_PRICES,
    ),
    # The dev VM: 2 vCPUs x 32 fp32 FLOP/cycle (AVX-512 FMA) x ~3 GHz; bf16 via AVX512_BF16.
    NodeTypeSpec(
        "local-cpu",
        "local",
        "CPU (2 vCPU AMD EPYC)",
        24,
        1,
        "-",
        "2024-01",
        _peaks(None, 0.38, 0.19, 0.095),
        CPU_PEAK,
        max_accelerators=1,
        device="cpu",
    ),
]
REFERENCE_NODE_TYPES: list[NodeTypeSpec] = [
    NodeTypeSpec(
        "ref-H200-141",
        "published-reference",
        "NVIDIA H200 SXM",
        141,
        8,
        "SXM5",
        "2024-11",
        _peaks(989, 989, 67, 34, tf32=495),
        NVIDIA_H200,
    )
]
