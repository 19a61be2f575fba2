"""Where and how the model runs: device, bf16 autocast, channels-last, torch.compile, DDP, and
deterministic mode. The speed flags default to on for CUDA and off for CPU, where they either do
not apply (compile needs a C++ toolchain and gains little) or are slower (bf16 without AMX)."""

from __future__ import annotations

import contextlib
import os
import random
from dataclasses import dataclass
from typing import cast

import numpy as np
import torch
import torch.distributed as dist
from torch import nn

from .config import TrainConfig, UsageError


@dataclass
class Runtime:
    """The resolved execution settings of this process."""

    device: torch.device
    amp: bool
    channels_last: bool
    compile: bool
    rank: int = 0
    world: int = 1

    @property
    def main(self) -> bool:
        """Whether this process writes files (checkpoints, progress, metrics)."""
        return self.rank == 0

    def flags(self) -> dict[str, object]:
        """What was active, for progress/metrics and the benchmark table."""
        return {
            "device": str(self.device),
            "bf16_autocast": self.amp,
            "channels_last": self.channels_last,
            "torch_compile": self.compile,
            "world_size": self.world,
            "cpu_threads": torch.get_num_threads(),
        }


def _resolve_device(name: str, local_rank: int) -> torch.device:
    if name == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda asked for, but PyTorch sees no CUDA GPU")
    if name == "cpu" or not torch.cuda.is_available():
        return torch.device("cpu")
    torch.cuda.set_device(local_rank)
    return torch.device("cuda", local_rank)


def seed_everything(seed: int) -> None:
    """Seed every global generator (model initialisation draws from torch's)."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def setup(cfg: TrainConfig) -> Runtime:
    """Resolve the device and flags, start DDP when launched by torchrun (WORLD_SIZE > 1), and
    switch on deterministic algorithms if asked. Call once per process, before building models."""
    if cfg.deterministic:
        # cuBLAS needs this before its first call to be reproducible.
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    if cfg.threads:
        # On shared or oversubscribed CPUs fewer threads can be several times faster.
        torch.set_num_threads(cfg.threads)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = _resolve_device(cfg.device, local_rank)
    rank = 0
    if world > 1:
        if not dist.is_initialized():
            dist.init_process_group(backend="nccl" if device.type == "cuda" else "gloo")
        rank = dist.get_rank()
    cuda = device.type == "cuda"
    rt = Runtime(
        device=device,
        amp=cuda if cfg.amp is None else cfg.amp,
        channels_last=cuda if cfg.channels_last is None else cfg.channels_last,
        compile=cuda if cfg.compile is None else cfg.compile,
        rank=rank,
        world=world,
    )
    if cfg.deterministic:
        # warn_only: a few CUDA backward kernels (adaptive average pooling) have no deterministic
        # version; CPU runs are bit-for-bit reproducible, CUDA runs as close as PyTorch allows.
        torch.use_deterministic_algorithms(True, warn_only=True)
        torch.backends.cudnn.benchmark = False
    elif cuda:
        torch.backends.cudnn.benchmark = True
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    return rt


def memory_format(rt: Runtime, dims: int) -> torch.memory_format:
    """channels_last (2D) / channels_last_3d (3D) when enabled, else contiguous."""
    if not rt.channels_last:
        return torch.contiguous_format
    return torch.channels_last if dims == 2 else torch.channels_last_3d


def autocast(rt: Runtime) -> contextlib.AbstractContextManager:
    """bf16 autocast on the run's device when enabled (bf16 needs no loss scaling)."""
    return torch.autocast(device_type=rt.device.type, dtype=torch.bfloat16, enabled=rt.amp)


def wrap(model: nn.Module, rt: Runtime, dims: int) -> nn.Module:
    """Move the model to the device and layout, wrap it in DDP and compile it as configured.
    The returned module is for training steps; keep the original for state dicts and evaluation."""
    # Module.to takes memory_format at runtime; torch's overloads omit it.
    model.to(rt.device, memory_format=memory_format(rt, dims))  # type: ignore[call-overload]
    runner: nn.Module = model
    if rt.world > 1:
        ids = [rt.device.index] if rt.device.type == "cuda" else None
        runner = nn.parallel.DistributedDataParallel(model, device_ids=ids)
    if rt.compile:
        runner = cast(nn.Module, torch.compile(runner))  # an OptimizedModule
    return runner


def agree(flag: bool, rt: Runtime) -> bool:
    """True on every rank if it is true on any (so all ranks stop at the same step)."""
    if rt.world == 1:
        return flag
    t = torch.tensor([1.0 if flag else 0.0], device=rt.device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return bool(t.item() > 0)


def broadcast_float(value: float, rt: Runtime) -> float:
    """Rank 0's value on every rank (rank 0 alone validates; all must act on its result)."""
    if rt.world == 1:
        return value
    t = torch.tensor([value], dtype=torch.float64, device=rt.device)
    dist.broadcast(t, src=0)
    return float(t.item())


def teardown(rt: Runtime) -> None:
    """Leave the process group, if this process joined one."""
    if rt.world > 1 and dist.is_initialized():
        dist.destroy_process_group()
