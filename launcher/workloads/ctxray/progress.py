"""OUT/progress.json: what the portal polls to show a running job (epoch, step, loss, speed, ETA),
each finished epoch's validation loss and metrics (what successive halving compares runs on),
and the run's own measurement (training throughput, peak memory, software) that the portal
writes back as a benchmark result once the job succeeded."""

from __future__ import annotations

import math
import os
import platform
import resource
import sys
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from .checkpoint import write_json
from .utilisation import UtilisationSampler

if TYPE_CHECKING:
    import torch

PROGRESS = "progress.json"
#: progress.json's list of finished epochs. Not "epochs": that key is the run's epoch count, which
#: the portal's percentage and the command-line client read.
EPOCH_METRICS = "epoch_metrics"
DECIMALS = 6


def _rounded(value: object) -> float | None:
    """A number for progress.json: 6 decimals; None for a missing, infinite or NaN value (JSON
    has no NaN, and a diverged run must not stop its own progress reports)."""
    if not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return round(float(value), DECIMALS)


def epoch_metrics(history: list[dict]) -> list[dict]:
    """Each finished epoch of a run's history as {"epoch", "val_loss", "val": {metric: value}},
    rounded for progress.json (one entry per epoch, bounded by --epochs)."""
    return [
        {
            "epoch": int(entry["epoch"]),
            "val_loss": _rounded(entry.get("val_loss")),
            "val": {k: _rounded(v) for k, v in (entry.get("val") or {}).items()},
        }
        for entry in history
    ]


class Progress:
    """Tracks speed over the steps run by this process and writes progress.json atomically.

    Speed (images/s) and ETA come from wall time since this process started training, so they
    are right after a resume too; ETA counts the training steps left (validation not included).
    """

    def __init__(
        self,
        out: str,
        epochs: int,
        steps_per_epoch: int,
        images_per_step: int,
        enabled: bool,
        world_size: int = 1,
    ) -> None:
        self.path = os.path.join(out, PROGRESS)
        self.epochs, self.steps_per_epoch = epochs, steps_per_epoch
        self.images_per_step = images_per_step
        self.enabled = enabled
        self.world_size = world_size  # processes (GPUs) training together; images_per_s is theirs
        self.started = time.monotonic()
        self.steps_done = 0  # by this process
        self.utilisation = UtilisationSampler() if enabled else None
        # Time spent in training steps only (data loading included, validation and
        # checkpointing not): what "training throughput" means in the benchmark table.
        self.train_seconds = 0.0
        self._mark: float | None = None
        self._epochs: list[dict] = []  # epoch_metrics of the epochs finished so far

    def epochs_done(self, history: list[dict]) -> None:
        """Call with the run's history after each epoch and after a resume: every later write
        carries those epochs' validation results."""
        self._epochs = epoch_metrics(history)

    def epoch_started(self) -> None:
        """Call when a training epoch (or its resumed rest) begins: starts the step clock."""
        self._mark = time.monotonic()

    def step_done(self) -> None:
        """Count one training step (call after the optimizer step)."""
        self.steps_done += 1
        now = time.monotonic()
        if self._mark is not None:
            self.train_seconds += now - self._mark
        self._mark = now

    def train_images_per_s(self) -> float | None:
        """Training throughput over all ranks: images trained / time in training steps."""
        if not self.steps_done or self.train_seconds <= 0:
            return None
        return round(self.steps_done * self.images_per_step / self.train_seconds, 3)

    def measured(self, device: torch.device) -> dict:
        """The run's measurement for metrics.json (and the portal's benchmark table)."""
        return {
            "train_images_per_s": self.train_images_per_s(),
            "train_steps": self.steps_done,
            "train_seconds": round(self.train_seconds, 3),
            "peak_memory_gb": peak_memory_gb(device),
            "software": software_versions(),
        }

    def _eta(self, state: str, steps_left: int, rate: float) -> float | None:
        if state == "succeeded":
            return 0.0
        return round(steps_left / rate, 1) if self.steps_done and state == "running" else None

    def write(self, state: str, epoch: int, step: int, loss: float | None, **extra: object) -> None:
        """Replace progress.json. epoch is 0-based internally and written 1-based (as shown to
        users); step is the number of steps finished in that epoch."""
        if not self.enabled:
            return
        elapsed = max(time.monotonic() - self.started, 1e-9)
        rate = self.steps_done / elapsed  # steps/s
        left = (self.epochs - epoch) * self.steps_per_epoch - step
        data = {
            "state": state,
            "epoch": min(epoch + 1, self.epochs),
            "epochs": self.epochs,
            "step": step,
            "steps_per_epoch": self.steps_per_epoch,
            "loss": loss,
            "images_per_s": round(rate * self.images_per_step, 2) if self.steps_done else None,
            "train_images_per_s": self.train_images_per_s(),
            "eta_s": self._eta(state, left, rate),
            "updated_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "pid": os.getpid(),
            "world_size": self.world_size,
        }
        if self.utilisation is not None:
            self.utilisation.sample()
            summary = self.utilisation.summary()
            if summary:
                data["utilisation"] = summary
        if self._epochs:
            data[EPOCH_METRICS] = self._epochs
        data.update(extra)
        write_json(self.path, data)
        # The same report as one line of the job's log: the portal shows the log's tail while the
        # run goes on (stderr: stdout's last line is the run's JSON summary).
        print(log_line(data), file=sys.stderr, flush=True)


def _number(value: object, digits: int) -> str | None:
    return f"{value:.{digits}f}" if isinstance(value, int | float) else None


def log_line(data: dict) -> str:
    """One progress report as a line of the job's log, e.g.
    `12:01:02 epoch 3/8 step 10/15: loss 0.6931, 12.4 images/s, about 40 s of training left`."""
    where = f"epoch {data['epoch']}/{data['epochs']}"
    state, loss = data["state"], _number(data.get("loss"), 4)
    val_loss = _number(data.get("val_loss"), 4)
    if state == "validating":
        said = f"{where}: validating" + (f" (training loss {loss})" if loss else "")
    elif state == "succeeded":
        early = " (stopped early: no better validation loss)" if data.get("stopped_early") else ""
        said = f"finished at {where}{early}" + (f": validation loss {val_loss}" if val_loss else "")
    elif state == "preempted":
        said = f"stopped at {where}, step {data['step']}: checkpoint saved, a resume continues here"
    elif val_loss is not None:
        said = f"{where} done: training loss {loss}, validation loss {val_loss}"
    elif loss is None:
        said = f"{where}: training"
    else:
        parts = [f"loss {loss}"]
        speed = _number(data.get("images_per_s"), 1)
        if speed:
            parts.append(f"{speed} images/s")
        if isinstance(data.get("eta_s"), int | float):
            parts.append(f"about {round(data['eta_s'])} s of training left")
        said = f"{where} step {data['step']}/{data['steps_per_epoch']}: {', '.join(parts)}"
    return f"{time.strftime('%H:%M:%S')} {said}"


def peak_memory_gb(device: torch.device) -> float:
    """Peak GPU memory allocated by PyTorch (CUDA), else this process's peak resident set."""
    import torch

    if getattr(device, "type", "cpu") == "cuda" and torch.cuda.is_available():
        return round(torch.cuda.max_memory_allocated(device) / 2**30, 3)
    # ru_maxrss is KiB on Linux.
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 3)


def software_versions() -> dict[str, str]:
    """Versions that move throughput: Python, PyTorch, CUDA/cuDNN, MONAI, the GPU or CPU."""
    import torch

    out = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "platform": platform.platform(),
        "threads": str(torch.get_num_threads()),
    }
    monai = sys.modules.get("monai")
    if monai is not None:
        out["monai"] = getattr(monai, "__version__", "")
    if torch.cuda.is_available():
        out.update(
            cuda=str(torch.version.cuda),
            cudnn=str(torch.backends.cudnn.version()),
            gpu=torch.cuda.get_device_name(0),
        )
    else:
        out["cpu"] = platform.processor() or platform.machine()
    return out
