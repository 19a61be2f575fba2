"""Utilisation sampling for progress.json: GPU utilisation and memory through NVML where a GPU
exists (pynvml, imported only if installed), CPU utilisation of this process otherwise (from
os.times, no extra dependency). The running mean goes into progress.json; the portal stores it
on the Job and the usage report weights it by GPU-seconds.

Standalone: no Django, nothing of the portal."""

from __future__ import annotations

import os
import time
from typing import Any


def _visible_indices(count: int) -> list[int]:
    raw = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    picked = [int(x) for x in raw.split(",") if x.strip().isdigit()]
    return [i for i in picked if i < count] or list(range(count))


class UtilisationSampler:
    """Call `sample()` now and then (each progress write); `summary()` is the running mean."""

    def __init__(self) -> None:
        self.source = "cpu"
        self._nvml: Any = None
        self._handles: list[Any] = []
        self._sum = 0.0
        self._memory_sum = 0.0
        self.samples = 0
        try:
            import pynvml  # optional: only where the NVIDIA driver and pynvml exist

            pynvml.nvmlInit()
            count = pynvml.nvmlDeviceGetCount()
            self._handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in _visible_indices(count)]
            if self._handles:
                self._nvml, self.source = pynvml, "gpu"
        except Exception:  # no module, no driver, no device: fall back to the CPU
            self._handles = []
        self._cpus = (
            len(os.sched_getaffinity(0))
            if hasattr(os, "sched_getaffinity")
            else (os.cpu_count() or 1)
        )
        self._last = self._cpu_now()

    @staticmethod
    def _cpu_now() -> tuple[float, float]:
        t = os.times()
        return time.monotonic(), t.user + t.system + t.children_user + t.children_system

    def _gpu_sample(self) -> tuple[float, float]:
        rates = [self._nvml.nvmlDeviceGetUtilizationRates(h) for h in self._handles]
        memory = [self._nvml.nvmlDeviceGetMemoryInfo(h).used for h in self._handles]
        return (sum(r.gpu for r in rates) / len(rates), sum(memory) / len(memory) / 2**20)

    def _cpu_sample(self) -> float | None:
        now = self._cpu_now()
        wall, cpu = now[0] - self._last[0], now[1] - self._last[1]
        if wall < 0.05:
            return None  # too short an interval to say anything
        self._last = now
        return max(0.0, min(100.0, 100.0 * cpu / (wall * self._cpus)))

    def sample(self) -> None:
        if self.source == "gpu":
            try:
                percent, memory = self._gpu_sample()
            except Exception:  # a driver hiccup must never stop training
                return
            self._memory_sum += memory
        else:
            value = self._cpu_sample()
            if value is None:
                return
            percent = value
        self._sum += percent
        self.samples += 1

    def summary(self) -> dict[str, Any] | None:
        if not self.samples:
            return None
        out: dict[str, Any] = {
            "source": self.source,
            "samples": self.samples,
            "mean_percent": round(self._sum / self.samples, 2),
        }
        if self.source == "gpu":
            out["memory_mean_mib"] = round(self._memory_sum / self.samples, 1)
            out["devices"] = len(self._handles)
        else:
            out["cpus"] = self._cpus
        return out
