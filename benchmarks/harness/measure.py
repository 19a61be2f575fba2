"""Measure training throughput and peak memory of one workload on this machine (CPU or CUDA).

Standalone: PyTorch and MONAI only. Under `torchrun` it trains with DistributedDataParallel and
reports the global throughput of all ranks (strategy "ddp").
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import platform
import resource
import statistics
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.harness.networks import GPT_SIZES, build, make_batch

PRECISIONS = ("fp32", "tf32", "fp16", "bf16")
_AUTOCAST = {"fp16": torch.float16, "bf16": torch.bfloat16}


@dataclass(frozen=True)
class RunConfig:
    """What to measure. `image_size` is the sequence length for GPT models (dims 1)."""

    model: str
    dims: int
    image_size: int
    batch_size: int
    precision: str = "fp32"
    device: str = "cpu"
    repeats: int = 5
    warmup: int = 2
    steps: int = 5
    node_type: str = ""
    notes: str = ""
    threads: int = 0  # CPU threads for torch; 0 keeps torch's default

    def __post_init__(self) -> None:
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {self.precision!r}")
        if min(self.batch_size, self.repeats, self.steps) < 1 or self.warmup < 0:
            raise ValueError("batch_size, repeats and steps must be >= 1, warmup >= 0")
        if self.model in GPT_SIZES and self.dims != 1:
            raise ValueError(f"{self.model} is a sequence model: dims must be 1")


@dataclass
class _Dist:
    """Process-group facts; world 1 and rank 0 when not launched by torchrun."""

    rank: int = 0
    world: int = 1
    local_rank: int = 0
    active: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


def _init_distributed(device: str) -> _Dist:
    if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
        return _Dist()
    import torch.distributed as dist

    backend = "nccl" if device == "cuda" else "gloo"
    dist.init_process_group(backend=backend)
    local = int(os.environ.get("LOCAL_RANK", "0"))
    return _Dist(dist.get_rank(), dist.get_world_size(), local, True)


def _device(cfg: RunConfig, d: _Dist) -> torch.device:
    if cfg.device == "cuda":
        if not torch.cuda.is_available():
            raise RuntimeError("--device cuda asked for, but torch sees no CUDA device")
        torch.cuda.set_device(d.local_rank)
        return torch.device("cuda", d.local_rank)
    return torch.device("cpu")


def _prepare(cfg: RunConfig, dev: torch.device) -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    # TF32 is a matmul/conv mode on Ampere+; fp32 must really be fp32 for honest comparisons.
    tf32 = cfg.precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.manual_seed(0)
    net = build(cfg.model, cfg.dims).to(dev)
    x, y = make_batch(cfg.model, cfg.dims, cfg.image_size, cfg.batch_size, dev)
    if dev.type == "cuda" and cfg.model not in GPT_SIZES:
        # channels_last lets cuDNN pick tensor-core kernels without layout transposes.
        fmt = torch.channels_last if cfg.dims == 2 else torch.channels_last_3d
        # Module.to takes memory_format at runtime; torch's overloads omit it.
        net = net.to(memory_format=fmt)  # type: ignore[call-overload]
        x = x.contiguous(memory_format=fmt)
    return net, x, y


def _autocast(cfg: RunConfig, dev: torch.device) -> contextlib.AbstractContextManager[Any]:
    if cfg.precision in _AUTOCAST:
        return torch.autocast(device_type=dev.type, dtype=_AUTOCAST[cfg.precision])
    return contextlib.nullcontext()


def _loss(cfg: RunConfig, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    if cfg.model in GPT_SIZES:
        return F.cross_entropy(out.flatten(0, 1).float(), y.flatten())
    return F.cross_entropy(out.float(), y)


def _sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def _steps(
    cfg: RunConfig, net: nn.Module, x: torch.Tensor, y: torch.Tensor, dev: torch.device
) -> Iterator[None]:
    """Yield after each full training step (forward, backward, optimizer)."""
    opt = torch.optim.Adam(net.parameters(), lr=1e-4)
    # Loss scaling only matters for fp16 on CUDA (bf16 has fp32's exponent range).
    scaler = torch.amp.GradScaler(dev.type, enabled=cfg.precision == "fp16" and dev.type == "cuda")
    net.train()
    while True:
        opt.zero_grad(set_to_none=True)
        with _autocast(cfg, dev):
            loss = _loss(cfg, net(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        yield


def _peak_memory_gb(dev: torch.device) -> float:
    if dev.type == "cuda":
        return torch.cuda.max_memory_allocated(dev) / 2**30
    # ru_maxrss is KiB on Linux: the whole process's peak resident set, Python included.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def software_versions(dev: torch.device) -> dict[str, str]:
    """Versions that explain a throughput: python, torch, monai, CUDA/cuDNN and the device name."""
    info = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "platform": platform.platform(),
        "cpu_threads": str(torch.get_num_threads()),
    }
    with contextlib.suppress(ImportError):
        import monai

        info["monai"] = monai.__version__
    if dev.type == "cuda":
        info["cuda"] = str(torch.version.cuda)
        info["cudnn"] = str(torch.backends.cudnn.version())
        info["gpu"] = torch.cuda.get_device_name(dev)
    else:
        info["cpu"] = platform.processor() or platform.machine()
    return info


def _time_repeats(cfg: RunConfig, step: Iterator[None], dev: torch.device, d: _Dist) -> list[float]:
    rates = []
    for _ in range(cfg.repeats):
        _sync(dev)
        start = time.perf_counter()
        for _ in range(cfg.steps):
            next(step)
        _sync(dev)
        elapsed = time.perf_counter() - start
        if d.active:
            # The slowest rank sets the pace of synchronous data-parallel training.
            import torch.distributed as dist

            t = torch.tensor([elapsed], device=dev)
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
            elapsed = float(t.item())
        rates.append(cfg.steps * cfg.batch_size * d.world / elapsed)
    return rates


def run(cfg: RunConfig) -> dict[str, Any]:
    """Train `cfg.warmup` untimed steps, then `cfg.repeats` timed repeats of `cfg.steps` steps.

    Returns the result in the portal's `POST /api/v1/benchmarks/` field names. Throughput is
    samples per second over all ranks (median of repeats, with min and max); peak memory is per
    GPU (CUDA max_memory_allocated after warm-up) or the process's peak RSS on CPU.
    """
    if cfg.threads > 0:
        # On a shared CPU, OpenMP workers that spin for busy cores make timings erratic.
        torch.set_num_threads(cfg.threads)
    d = _init_distributed(cfg.device)
    dev = _device(cfg, d)
    net, x, y = _prepare(cfg, dev)
    if d.active:
        from torch.nn.parallel import DistributedDataParallel as DDP

        net = DDP(net, device_ids=[dev.index] if dev.type == "cuda" else None)
    step = _steps(cfg, net, x, y, dev)
    for _ in range(cfg.warmup):
        next(step)
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats(dev)
    rates = _time_repeats(cfg, step, dev, d)
    result = _result(cfg, d, rates, _peak_memory_gb(dev), software_versions(dev))
    if d.active:
        import torch.distributed as dist

        dist.destroy_process_group()
    return result


def _result(
    cfg: RunConfig, d: _Dist, rates: list[float], peak_gb: float, software: dict[str, str]
) -> dict[str, Any]:
    size = cfg.image_size or (GPT_SIZES[cfg.model].block_size if cfg.model in GPT_SIZES else 0)
    return {
        "node_type": cfg.node_type,
        "workload": cfg.model,
        "dims": cfg.dims,
        "image_size": size,
        "precision": cfg.precision,
        "strategy": "ddp" if d.active else "single",
        "gpus": d.world,
        "batch_size": cfg.batch_size,
        "throughput": round(statistics.median(rates), 4),
        "throughput_min": round(min(rates), 4),
        "throughput_max": round(max(rates), 4),
        "repeats": cfg.repeats,
        "peak_memory_gb": round(peak_gb, 4),
        "source": "measured",
        "software": software,
        "measured_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "notes": cfg.notes
        or (
            f"steps per repeat: {cfg.steps}, warm-up steps: {cfg.warmup}, "
            f"Adam, synthetic data, device {cfg.device}"
        ),
    }
