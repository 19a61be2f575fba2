"""The catalogue as plain data: workloads, facilities, node types, published and measured results.

No Django: `seed_demo` loads these into the database, the recommender's benchmark and tests use
them directly. Keys (workload keys, node type names as in the Turing seed) are stable.
Money is US dollars; memory is GiB ("GB" on GPU datasheets).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from benchmarks.recommender.types import BenchmarkRecord, NodeTypeInfo, Workload

SEED_004 = (
    "Llewellyn-Jones & Lazauskas, 'Matching AI Research to HPC Resource through "
    "Benchmarking and Processes', The Alan Turing Institute, HPC Days 2024"
)
NVIDIA_DLE = (
    "NVIDIA DeepLearningExamples, PyTorch ResNet-50 v1.5 training performance "
    "(github.com/NVIDIA/DeepLearningExamples, PyTorch/Classification/ConvNets)"
)
LAMBDA_V2 = (
    "Lambda deeplearning-benchmark v2, PyTorch ResNet-50 training throughput "
    "(github.com/LambdaLabsML/deeplearning-benchmark)"
)
LAMBDA = (
    "Lambda deeplearning-benchmark, PyTorch ResNet-50 training throughput, plain AMP / TF32 "
    "(github.com/LambdaLabsML/deeplearning-benchmark)"
)
AWS_PRICES = (
    "AWS EC2 On-Demand pricing, us-east-1, Linux, list prices recorded 2024-05 "
    "(aws.amazon.com/ec2/pricing/on-demand/); AWS cut P4d/P5 on-demand prices by up "
    "to 33%/45% in June 2025: verify before quoting. Spot: typical us-east-1 values "
    "from EC2 spot price history, 2024, approximate (they move hourly by zone)"
)
LOCAL_VM = (
    "this repository's harness on the 2-core Debian 12 dev VM (AMD EPYC, CPU only, "
    "1 thread), 2026-11-22"
)

# --- Workloads -------------------------------------------------------------------------------
# CNNs: MONAI networks, 1 input channel, 2 classes; ResNets with a stride-2 first conv (ImageNet
# layout). Parameters, forward FLOPs and saved activations were obtained with
# `python -m benchmarks.harness profile` (torch 2.13.0, monai 1.6.1): networks instantiated on
# the meta device, FLOPs from torch.utils.flop_counter.FlopCounterMode (2 per multiply-add),
# activations = tensors autograd saves for backward (fp32, deduplicated, parameters excluded).
# Training FLOPs = 3 x forward (backward ~ 2 x forward). References: 224x224 (2D), 128^3 (3D).
# GPT-2: the Turing table's parameter counts (minGPT, character vocabulary of 65, 128-token
# blocks: the harness's GPT reproduces them to 0.01M); training FLOPs = 6 x parameters x 128
# tokens (FlopCounterMode's count is within 3%: attention adds the rest).
_CNN = [  # model, dims, parameters, forward FLOPs, activation bytes per sample
    ("densenet121", 2, 6_949_634, 5_508_927_488, 130_294_546),
    ("densenet121", 3, 11_244_674, 85_802_881_024, 949_168_914),
    ("densenet169", 2, 12_481_538, 6_559_013_376, 157_540_626),
    ("densenet169", 3, 18_546_050, 88_826_976_768, 1_006_028_050),
    ("resnet18", 2, 11_172_162, 3_469_772_800, 21_816_850),
    ("resnet18", 3, 33_161_922, 62_813_898_752, 259_694_098),
    ("resnet50", 2, 23_509_698, 8_016_928_768, 85_720_594),
    ("resnet50", 3, 46_163_010, 81_067_515_904, 696_213_010),
]
_GPT = [  # model, parameters (Turing table), activation bytes per 128-token sample (profiled)
    ("gpt2", 85_210_000, 85_782_530),
    ("gpt2-m", 302_510_000, 227_627_010),
    ("gpt2-l", 708_640_000, 426_094_594),
    ("gpt2-xl", 1_475_870_000, 709_562_370),
    ("gpt2-xxl", 2_656_080_000, 1_063_809_026),
    ("gpt2-xxxl", 6_609_330_000, 1_984_638_978),
]
GPT_SEQUENCE_LENGTH = 128

WORKLOADS: list[Workload] = [
    Workload(
        key=f"{m}-{d}d",
        model=m,
        dims=d,
        family="cnn",
        reference_size=224 if d == 2 else 128,
        parameters=p,
        train_flops_per_sample=3.0 * f,
        activation_bytes_per_sample=a,
        description=f"MONAI {m}, {'2D slices 224x224' if d == 2 else '3D volumes 128^3'}",
    )
    for m, d, p, f, a in _CNN
] + [
    Workload(
        key=m,
        model=m,
        dims=1,
        family="gpt",
        reference_size=GPT_SEQUENCE_LENGTH,
        parameters=p,
        train_flops_per_sample=6.0 * p * GPT_SEQUENCE_LENGTH,
        activation_bytes_per_sample=a,
        description=f"GPT-2 style ({m}), {GPT_SEQUENCE_LENGTH}-token samples ({SEED_004})",
    )
    for m, p, a in _GPT
]

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


# --- Results ---------------------------------------------------------------------------------
# ResNet-50 at 224x224, one GPU, images/s (REFERENCE.md). "AMP" is fp16 autocast. Batch sizes are
# the per-GPU sizes of those benchmark configurations (256 mixed precision, 112/256 fp32/TF32).
def _published(
    node: str, precision: str, batch: int, thr: float, cite: str, key: str
) -> BenchmarkRecord:
    return BenchmarkRecord(
        node_type=node,
        model="resnet50",
        dims=2,
        image_size=224,
        precision=precision,
        strategy="single",
        gpus=1,
        batch_size=batch,
        throughput=thr,
        source="published",
        citation=cite,
        id=key,
    )


PUBLISHED_RESULTS: list[BenchmarkRecord] = [
    _published("J-V100-32", "fp32", 112, 367, NVIDIA_DLE + ", V100 FP32", "dle-v100-fp32"),
    _published("J-V100-32", "fp16", 256, 1200, NVIDIA_DLE + ", V100 AMP", "dle-v100-amp"),
    _published("B-A100-80", "tf32", 256, 938, NVIDIA_DLE + ", A100 80GB TF32", "dle-a100-tf32"),
    _published("B-A100-80", "fp16", 256, 2470, NVIDIA_DLE + ", A100 80GB AMP", "dle-a100-amp"),
    _published("p5.48xlarge", "fp16", 256, 2790, LAMBDA_V2 + ", H100 SXM AMP", "lambda-h100-amp"),
    _published("p5.48xlarge", "tf32", 256, 1895, LAMBDA_V2 + ", H100 SXM TF32", "lambda-h100-tf32"),
    # A second harness on the same chips (Lambda's plain PyTorch AMP is slower than NVIDIA's
    # tuned DALI pipeline): these give each chip a same-chip neighbour, and the spread between
    # the two harnesses is part of the honest error (docs/recommender.md).
    _published("J-V100-32", "fp16", 256, 833, LAMBDA + ", V100 AMP", "lambda-v100-amp"),
    _published("B-A100-80", "fp16", 256, 1582, LAMBDA + ", A100 80GB AMP", "lambda-a100-amp"),
    _published("S-H100-80", "fp16", 256, 1976, LAMBDA + ", H100 PCIe AMP", "lambda-h100pcie-amp"),
    _published("S-H100-80", "tf32", 256, 1248, LAMBDA + ", H100 PCIe TF32", "lambda-h100pcie-tf32"),
    _published(
        "p5.48xlarge", "fp16", 256, 2616, LAMBDA + " v1, H100 SXM AMP", "lambda-v1-h100-amp"
    ),
]
# No published ResNet-50 training figure with a traceable source was found for the AMD MI100,
# MI210, Intel Max 1550 or AWS A10G: those rows are roofline predictions (low confidence) and
# name the calibration result on the chip with the nearest peak as their neighbour.
REFERENCE_RESULTS: list[BenchmarkRecord] = [
    _published("ref-H200-141", "fp16", 256, 3079, LAMBDA_V2 + ", H200 AMP", "lambda-h200-amp"),
    _published("ref-H200-141", "tf32", 256, 2259, LAMBDA_V2 + ", H200 TF32", "lambda-h200-tf32"),
]

# Measured here with `python -m benchmarks.harness run --device cpu --repeats 5 --warmup 2
# --steps 2 --threads 1 --node-type local-cpu ...` (torch 2.13.0+cpu, monai 1.6.1, python
# 3.11.7, 2026-11-22, while other test suites shared the VM: one thread kept timings steady),
# one line per run: model, dims, size, precision, batch, median, min, max samples/s, peak RSS GiB.
_LOCAL_RUNS: list[tuple] = [
    ("resnet18", 2, 64, "fp32", 8, 30.109, 28.035, 32.533, 0.64),
    ("resnet18", 2, 96, "fp32", 8, 22.756, 20.115, 25.589, 0.66),
    ("resnet18", 2, 128, "fp32", 8, 16.005, 14.201, 17.507, 0.70),
    ("resnet18", 2, 96, "fp32", 16, 26.273, 21.446, 28.487, 0.72),
    ("resnet50", 2, 64, "fp32", 8, 11.509, 10.797, 12.518, 0.89),
    ("resnet50", 2, 96, "fp32", 8, 7.724, 7.610, 8.280, 0.96),
    ("resnet50", 2, 128, "fp32", 8, 6.067, 5.638, 6.324, 1.11),
    ("resnet50", 2, 96, "fp32", 16, 11.288, 10.697, 12.202, 1.11),
    ("densenet121", 2, 64, "fp32", 8, 22.613, 21.040, 25.467, 0.61),
    ("densenet121", 2, 96, "fp32", 8, 13.624, 12.325, 14.574, 0.71),
    ("densenet121", 2, 128, "fp32", 8, 8.515, 8.428, 8.828, 0.88),
    ("densenet121", 2, 96, "fp32", 16, 15.144, 14.380, 16.375, 0.95),
    ("resnet18", 3, 32, "fp32", 2, 5.019, 4.925, 5.537, 1.02),
    ("densenet121", 3, 32, "fp32", 2, 7.446, 6.991, 7.614, 0.65),
    ("gpt2", 1, 128, "fp32", 2, 0.605, 0.404, 0.875, 1.76),
    ("resnet50", 2, 96, "bf16", 8, 13.881, 11.035, 15.138, 0.90),
]
MEASURED_RESULTS: list[BenchmarkRecord] = [
    BenchmarkRecord(
        node_type="local-cpu",
        model=m,
        dims=d,
        image_size=s,
        precision=p,
        strategy="single",
        gpus=1,
        batch_size=b,
        throughput=t,
        throughput_min=lo,
        throughput_max=hi,
        peak_memory_gb=mem,
        source="measured",
        citation=LOCAL_VM,
        id=f"local-{m}-{d}d-{s}-{p}-b{b}",
    )
    for m, d, s, p, b, t, lo, hi, mem in _LOCAL_RUNS
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
