"""OUT/progress.json: what the portal polls to show a running job (epoch, step, loss, speed, ETA)."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime

from .checkpoint import write_json

PROGRESS = "progress.json"


class Progress:
    """Tracks speed over the steps run by this process and writes progress.json atomically.

    Speed (images/s) and ETA come from wall time since this process started training, so they
    are right after a resume too; ETA counts the training steps left (validation not included).
    """

    def __init__(self, out: str, epochs: int, steps_per_epoch: int, images_per_step: int, enabled: bool) -> None:
        self.path = os.path.join(out, PROGRESS)
        self.epochs, self.steps_per_epoch = epochs, steps_per_epoch
        self.images_per_step = images_per_step
        self.enabled = enabled
        self.started = time.monotonic()
        self.steps_done = 0  # by this process

    def step_done(self) -> None:
        """Count one training step (call after the optimizer step)."""
        self.steps_done += 1

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
            "eta_s": self._eta(state, left, rate),
            "updated_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "pid": os.getpid(),
        }
        data.update(extra)
        write_json(self.path, data)
