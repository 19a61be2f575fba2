"""Training configuration, its validation, and the workload's error and exit-code conventions."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Any

#: Exit status of a run stopped by SIGTERM/SIGUSR1 after saving a checkpoint. 75 is EX_TEMPFAIL
#: ("try again later"): the launcher requeues the job with ``--resume``.
EXIT_PREEMPTED = 75
#: Exit status for bad arguments or unusable data (argparse uses 2 as well).
EXIT_USAGE = 2

MODEL_NAMES = ("densenet121", "densenet161", "densenet169", "densenet201", "resnet18", "resnet50")


class UsageError(Exception):
    """A problem with the arguments or the data that the user must fix; printed as one line."""


@dataclass
class TrainConfig:
    """Everything one training run needs. Defaults follow the CLAIRE pipeline where it says."""

    data: str
    out: str
    # The folder --data must stay inside (the project's folder, given by the portal): checked
    # here, on the node, when the run starts, with every symlink resolved; "" = no check.
    data_root: str = ""
    model: str = "densenet121"
    epochs: int = 50
    batch_size: int = 16
    lr: float = 1e-4
    lr_step: int = 10  # StepLR step size in epochs (CLAIRE sweeps 10/15/20)
    lr_gamma: float = 0.1
    weight_decay: float = 1e-4
    patience: int = 10  # early stopping: epochs without a better validation loss
    size: int = 224
    dims: int = 2  # 2: images and slices, 3: whole volumes
    slices: int = 0  # volumes in 2D mode: keep this many central slices (0 = all)
    folds: int = 1
    fold: int = 0
    val_fraction: float = 0.2  # patients held out for validation when folds == 1
    window: tuple[float, float] = (-500.0, 1500.0)  # CT level, width (HU), as in CLAIRE
    lung_crop: bool = True
    augment: bool = True
    pretrained: str | None = None
    device: str = "auto"
    amp: bool | None = None  # bf16 autocast; None = on for CUDA, off for CPU
    channels_last: bool | None = None
    compile: bool | None = None
    deterministic: bool = False
    seed: int = 0
    workers: int = 0
    threads: int = 0  # CPU intra-op threads; 0 = PyTorch's default (one per core)
    resume: bool = False
    bootstrap: int = 1000
    progress_every: int = 10

    def confine_data(self) -> None:
        """With a `data_root`: resolve --data now, where it is read (every symlink followed),
        refuse it unless it lies inside the resolved root, and read the resolved path from
        here on, so a symlink swapped in after the portal checked it at launch is caught."""
        if not self.data_root:
            return
        root, real = os.path.realpath(self.data_root), os.path.realpath(self.data)
        if not os.path.isdir(root):
            raise UsageError(f"--data-root is not a folder: {self.data_root}")
        if real != root and not real.startswith(root.rstrip("/") + "/"):
            raise UsageError(f"--data resolves to {real}, outside {root} (a symlink?): refused")
        self.data = real

    def validate(self) -> None:
        """Raise UsageError with a one-line message for any value that cannot work."""
        self.confine_data()
        if not os.path.exists(self.data):
            raise UsageError(f"data not found: {self.data}")
        if self.model not in MODEL_NAMES:
            raise UsageError(
                f"unknown model {self.model!r}; choose one of {', '.join(MODEL_NAMES)}"
            )
        checks = [
            (self.epochs >= 1, "--epochs must be at least 1"),
            (self.batch_size >= 2, "--batch-size must be at least 2 (batch norm needs 2 samples)"),
            (self.lr > 0, "--lr must be positive"),
            (self.lr_step >= 1, "--lr-step must be at least 1"),
            (0 < self.lr_gamma <= 1, "--lr-gamma must be in (0, 1]"),
            (self.weight_decay >= 0, "--weight-decay must not be negative"),
            (self.patience >= 1, "--patience must be at least 1"),
            (self.size >= 16, "--size must be at least 16"),
            (self.dims in (2, 3), "--dims must be 2 or 3"),
            (self.slices >= 0, "--slices must not be negative"),
            (self.folds >= 1, "--folds must be at least 1"),
            (0 <= self.fold < self.folds, f"--fold must be in 0..{self.folds - 1}"),
            (0 < self.val_fraction < 1, "--val-fraction must be in (0, 1)"),
            (self.window[1] > 0, "--window width must be positive"),
            (self.device in ("auto", "cpu", "cuda"), "--device must be auto, cpu or cuda"),
            (self.workers >= 0, "--workers must not be negative"),
            (self.threads >= 0, "--threads must not be negative"),
            (self.bootstrap >= 0, "--bootstrap must not be negative"),
            (self.progress_every >= 1, "--progress-every must be at least 1"),
        ]
        for ok, message in checks:
            if not ok:
                raise UsageError(message)
        if self.pretrained and not os.path.isfile(self.pretrained):
            raise UsageError(f"pretrained weights not found: {self.pretrained}")

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly copy, stored in checkpoints and metrics so a result names its settings."""
        return dataclasses.asdict(self)

    # Fields that may differ between an interrupted run and its resumption without changing
    # what is computed: where files live, how fast data is read, how often progress is written.
    RESUME_FREE = ("data", "data_root", "out", "resume", "workers", "progress_every", "device")
