"""The catalogue's workloads: the MONAI CNNs (2D and 3D) and the GPT-2 sizes, with their
parameters, training FLOPs and saved activations per sample.

No Django; `benchmarks.catalogue` re-exports `WORKLOADS` and `GPT_SEQUENCE_LENGTH`. Workload keys
are stable.
"""

from __future__ import annotations

from benchmarks.catalogue_sources import SEED_004
from benchmarks.recommender.types import Workload

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
