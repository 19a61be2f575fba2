"""Benchmark the CT/X-ray workload's training step and data pipeline; prints one table.

    python bench/bench_workload.py                      # CPU defaults, about a minute
    python bench/bench_workload.py --device cuda --model resnet50 --size 224 --batch-size 256

(a) the optimised training step (bf16 autocast, channels-last, torch.compile, non-blocking copies
from pinned memory: each where it applies) against a plain fp32 eager step, same model and batch;
(b) the data pipeline (read files, window, lung crop, resize, normalise, augment, with DataLoader
workers) alone and feeding the optimised step, against in-memory synthetic input.
On CUDA it also reports model FLOP utilisation: 3 x forward FLOPs per image (counted from the
model's convolutions and linear layers) x images/s / the GPU's dense bf16 peak.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch
from torch import nn
from torch.utils.data import DataLoader

from launcher.workloads.ctxray.config import TrainConfig
from launcher.workloads.ctxray.dataset import CtXrayDataset, EpochSampler
from launcher.workloads.ctxray.models import build_model, flops_per_sample
from launcher.workloads.ctxray.sources import discover
from launcher.workloads.ctxray.synth import synthesize

# Dense bf16 tensor-core peaks (vendor datasheets), by a substring of the device name.
PEAK_BF16 = (
    ("H200", 989.4e12),
    ("H100 PCIe", 756.0e12),
    ("H100", 989.4e12),
    ("A100", 312.0e12),
    ("L40S", 362.05e12),
    ("V100", 125.0e12),
)


def _cpu_has_bf16() -> bool:
    try:
        with open("/proc/cpuinfo") as f:
            flags = f.read()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def _args() -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--model", default="resnet18")
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--steps", type=int, default=6, help="timed steps per measurement")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--images", type=int, default=96, help="synthetic files for the pipeline test")
    p.add_argument(
        "--compile",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="default: on for CUDA; off for CPU (inductor's C++ build takes minutes there)",
    )
    p.add_argument(
        "--amp",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="bf16 autocast; default: on for CUDA, on CPU only with native bf16 (AVX512-BF16/AMX)",
    )
    p.add_argument(
        "--threads", type=int, default=0, help="CPU intra-op threads (0: PyTorch's default)"
    )
    p.add_argument("--peak-tflops", type=float, help="override the dense bf16 peak for MFU")
    return p.parse_args()


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def _step_fn(
    model: nn.Module, device: torch.device, amp: bool, fmt: torch.memory_format
) -> Callable:
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4, amsgrad=True)
    loss_fn = nn.CrossEntropyLoss()

    def step(x: torch.Tensor, y: torch.Tensor) -> None:
        x = x.to(device, non_blocking=True).contiguous(memory_format=fmt)
        y = y.to(device, non_blocking=True)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp):
            loss = loss_fn(model(x).float(), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    return step


def _time(
    step: Callable, batches: Iterator, steps: int, warmup: int, device: torch.device, batch: int
) -> float:
    """Images/s over `steps` steps after `warmup` untimed ones (per-step median, robust to the
    noise of a shared machine)."""
    for _ in range(warmup):
        step(*next(batches))
    times = []
    for _ in range(steps):
        _sync(device)
        t = time.perf_counter()
        step(*next(batches))
        _sync(device)
        times.append(time.perf_counter() - t)
    return batch / statistics.median(times)


def _memory_batches(args: argparse.Namespace, device: torch.device) -> Iterator:
    pin = device.type == "cuda"
    x = torch.randn(args.batch_size, 1, args.size, args.size)
    y = torch.randint(0, 2, (args.batch_size,))
    x, y = (x.pin_memory(), y.pin_memory()) if pin else (x, y)
    while True:
        yield x, y


def _file_batches(loader_factory: Callable[[int], DataLoader]) -> Iterator:
    epoch = 0
    while True:
        for x, y, _ in loader_factory(epoch):
            yield x, y
        epoch += 1


def _model(
    args: argparse.Namespace, device: torch.device, fmt: torch.memory_format, compiled: bool
) -> nn.Module:
    torch.manual_seed(0)
    model = build_model(args.model, 2).to(device, memory_format=fmt).train()
    return torch.compile(model) if compiled else model


def main() -> None:
    """Run every measurement and print the table."""
    args = _args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    cuda = device.type == "cuda"
    amp = args.amp if args.amp is not None else (cuda or _cpu_has_bf16())
    compiled = args.compile if args.compile is not None else cuda
    if cuda:
        torch.backends.cudnn.benchmark = True
        # The baseline is plain fp32: no TF32 in matmuls or convolutions (cuDNN allows it by default).
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    rows: list[tuple[str, str]] = []
    base = _time(
        _step_fn(
            _model(args, device, torch.contiguous_format, False),
            device,
            False,
            torch.contiguous_format,
        ),
        _memory_batches(args, device),
        args.steps,
        args.warmup,
        device,
        args.batch_size,
    )
    model = _model(args, device, torch.channels_last, compiled)
    fast_step = _step_fn(model, device, amp, torch.channels_last)
    warm = args.warmup + (3 if compiled else 0)  # compilation happens in the first calls
    fast = _time(
        fast_step, _memory_batches(args, device), args.steps, warm, device, args.batch_size
    )
    active = [
        n
        for n, on in (
            ("bf16 autocast", amp),
            ("channels-last", True),
            ("torch.compile", compiled),
            ("pinned non-blocking copies", cuda),
        )
        if on
    ]
    rows += [
        ("(a) baseline step: fp32, eager, contiguous", f"{base:,.1f} img/s"),
        (f"(a) optimised step: {', '.join(active)}", f"{fast:,.1f} img/s"),
        ("(a) optimised / baseline", f"{fast / base:.2f}x"),
    ]
    rows += _pipeline_rows(args, device, fast_step, fast)
    flops = flops_per_sample(build_model(args.model, 2), (1, args.size, args.size))
    rows.append(("forward GFLOPs per image (conv + linear)", f"{flops / 1e9:.3f}"))
    peak = args.peak_tflops * 1e12 if args.peak_tflops else _peak(device)
    if peak:
        mfu = f"{3 * flops * fast / peak:.1%} of {peak / 1e12:.0f} TFLOP/s"
        rows.append(("MFU of the optimised step (3 x fwd FLOPs)", mfu))
    _print(args, device, rows)


def _pipeline_rows(
    args: argparse.Namespace, device: torch.device, fast_step: Callable, fast: float
) -> list:
    with tempfile.TemporaryDirectory() as tmp:
        synthesize(tmp, "ct", n=args.images, size=max(128, args.size), seed=0)
        cfg = TrainConfig(data=tmp, out=tmp, size=args.size, workers=args.workers)
        dataset = CtXrayDataset(discover(tmp).items, cfg, train=True)

        def loader(epoch: int) -> DataLoader:
            return DataLoader(
                dataset,
                batch_size=args.batch_size,
                num_workers=args.workers,
                drop_last=True,
                sampler=EpochSampler(len(dataset), 0, epoch),
                pin_memory=device.type == "cuda",
                prefetch_factor=4 if args.workers else None,
                persistent_workers=False,
            )

        batches = _file_batches(loader)
        next(batches)  # start the workers before timing
        n_batches = max(2, args.images // args.batch_size)
        t = time.perf_counter()
        for _ in range(n_batches):
            next(batches)
        alone = n_batches * args.batch_size / (time.perf_counter() - t)
        fed = _time(
            fast_step, _file_batches(loader), args.steps, args.warmup, device, args.batch_size
        )
    return [
        (
            f"(b) pipeline alone: files -> augmented tensors, {args.workers} workers",
            f"{alone:,.1f} img/s",
        ),
        ("(b) optimised step fed by the pipeline", f"{fed:,.1f} img/s"),
        ("(b) fed by pipeline / in-memory input", f"{fed / fast:.2f}x"),
        (
            "(b) pipeline headroom (alone / step speed; >1: not the bottleneck)",
            f"{alone / fast:.2f}x",
        ),
    ]


def _peak(device: torch.device) -> float | None:
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    return next((peak for key, peak in PEAK_BF16 if key in name), None)


def _print(args: argparse.Namespace, device: torch.device, rows: list[tuple[str, str]]) -> None:
    if device.type == "cuda":
        where = torch.cuda.get_device_name(device)
    else:
        cpu = platform.processor() or platform.machine()
        where = f"{cpu}, {os.cpu_count()} cores, {torch.get_num_threads()} threads"
    print(
        f"ctxray workload benchmark: {args.model} 2D {args.size}x{args.size}, batch {args.batch_size}, "
        f"{args.steps} timed steps (median), torch {torch.__version__}, {where}"
    )
    width = max(len(k) for k, _ in rows)
    print("-" * (width + 20))
    for key, value in rows:
        print(f"{key:<{width}}  {value:>16}")


if __name__ == "__main__":
    main()
