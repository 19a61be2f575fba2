"""Static profile of a workload: parameters, forward FLOPs and activation memory per sample.

Everything runs on PyTorch's `meta` device, so even a 3D DenseNet at 128^3 or GPT2-XXXL is
profiled in seconds without allocating its memory. The recommender's catalogue records the
numbers this prints (`python -m benchmarks.harness profile`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.flop_counter import FlopCounterMode

from benchmarks.harness.networks import GPT, GPT_SIZES, build, make_batch


@dataclass(frozen=True)
class Profile:
    """Per-sample costs of one training step of a workload at one input size."""

    model: str
    dims: int
    image_size: int
    parameters: int
    forward_flops: int
    activation_bytes: int

    def as_dict(self) -> dict[str, int | str]:
        return asdict(self)


def _loss(model_key: str, out: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    if model_key in GPT_SIZES:
        return F.cross_entropy(out.flatten(0, 1), target.flatten())
    return F.cross_entropy(out, target)


def profile(model_key: str, dims: int, image_size: int, batch_size: int = 2) -> Profile:
    """Count parameters, forward FLOPs and saved activations for one sample, in fp32.

    FLOPs are counted by `torch.utils.flop_counter.FlopCounterMode` (2 per multiply-add,
    matmuls and convolutions only). Activations are the tensors autograd keeps for the backward
    pass, deduplicated by storage and excluding parameters, i.e. what training holds at the
    peak between forward and backward. Batch 2 then halved keeps batch-norm layers honest.
    """
    meta = torch.device("meta")
    with meta:
        net = build(model_key, dims)
    x, y = make_batch(model_key, dims, image_size, batch_size, meta)
    param_ids = {p.untyped_storage()._cdata for p in net.parameters()}
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        key = t.untyped_storage()._cdata
        if key not in param_ids:
            seen[key] = max(seen.get(key, 0), t.untyped_storage().nbytes())
        return t

    with (
        FlopCounterMode(display=False) as counter,
        torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t),
    ):
        out = net(x)
        loss = _loss(model_key, out, y)
    del loss
    n_params = (
        net.transformer_parameters()
        if isinstance(net, GPT)  # build() makes a GPT exactly for the GPT_SIZES keys
        else sum(p.numel() for p in net.parameters())
    )
    return Profile(
        model_key,
        dims,
        image_size,
        n_params,
        counter.get_total_flops() // batch_size,
        sum(seen.values()) // batch_size,
    )


def reference_profiles() -> list[Profile]:
    """The profiles recorded in benchmarks/catalogue.py: CNNs at 224^2 and 128^3, GPT at 128."""
    rows = [
        profile(m, d, 224 if d == 2 else 128)
        for m in ("densenet121", "densenet169", "resnet18", "resnet50")
        for d in (2, 3)
    ]
    rows += [profile(m, 1, GPT_SIZES[m].block_size) for m in GPT_SIZES if m != "gpt2-tiny"]
    return rows


def count_parameters(net: nn.Module) -> int:
    """Trainable parameters of a network."""
    return sum(p.numel() for p in net.parameters() if p.requires_grad)
