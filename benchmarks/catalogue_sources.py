"""The catalogue's shared citations: the Turing seed, the published ResNet-50 benchmarks, AWS's
prices and this repository's own measurements.

Plain strings, no Django; `benchmarks.catalogue` re-exports them. The chips' datasheet citations
sit beside their peaks in `benchmarks.catalogue_hardware`.
"""

from __future__ import annotations

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
