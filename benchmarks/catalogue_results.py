"""The catalogue's results: published ResNet-50 training throughputs (with their citations, on
the facilities' node types and on reference hardware) and the runs measured on the dev VM's CPU.

No Django; `benchmarks.catalogue` re-exports the result lists.
"""

from __future__ import annotations

from benchmarks.catalogue_sources import LAMBDA, LAMBDA_V2, LOCAL_VM, NVIDIA_DLE
from benchmarks.recommender.types import BenchmarkRecord


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
