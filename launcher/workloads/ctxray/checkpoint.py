"""Atomic files (checkpoints, progress, metrics) and the stop-on-signal flag."""

from __future__ import annotations

import json
import os
import random
import signal
import tempfile
from typing import Any, cast

import numpy as np
import torch

CHECKPOINT = "checkpoint.pt"
BEST = "best.pt"


def _atomic(path: str, write: Any) -> None:
    """Write through a temporary file in the same folder, fsync, then rename over path, so a
    reader (or a resume after a kill) sees the old file or the new one, never half of one."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_json(path: str, data: dict) -> None:
    """Atomically replace path with data as JSON."""
    _atomic(path, lambda f: f.write(json.dumps(data, indent=2, allow_nan=False).encode()))


def save(path: str, state: dict) -> None:
    """Atomically replace path with a torch checkpoint."""
    _atomic(path, lambda f: torch.save(state, f))


def load(path: str) -> dict:
    """A checkpoint written by save. Loaded with `weights_only=True`: the folder it comes from
    is writable by the job (and, on a shared cluster, possibly by others), so a file there must
    never get to run code through unpickling. Everything `save` writes is tensors, plain dicts,
    lists, tuples, strings and numbers (see rng_state), which is what weights_only accepts."""
    return torch.load(path, map_location="cpu", weights_only=True)


def rng_state() -> dict:
    """Every global random state a training step may draw from, as tensors, numbers and
    strings only (numpy's state array becomes a tensor) so the checkpoint loads under
    weights_only."""
    # The legacy (default) form is a tuple; the stubs also allow the dict form.
    name, keys, pos, has_gauss, cached = cast(
        tuple[str, np.ndarray, int, int, float], np.random.get_state()
    )
    state = {
        "python": random.getstate(),
        "torch": torch.get_rng_state(),
        "numpy": {
            "name": str(name),
            "keys": torch.from_numpy(keys.astype(np.int64)),
            "pos": int(pos),
            "has_gauss": int(has_gauss),
            "cached": float(cached),
        },
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict) -> None:
    """Restore what rng_state captured."""
    random.setstate(state["python"])
    saved = state["numpy"]
    np.random.set_state(
        (
            saved["name"],
            saved["keys"].numpy().astype(np.uint32),
            saved["pos"],
            saved["has_gauss"],
            saved["cached"],
        )
    )
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


class StopFlag:
    """Set by SIGTERM (Slurm time limit, spot interruption) or SIGUSR1 (Slurm --signal): the
    loop finishes its current step, checkpoints and exits with EXIT_PREEMPTED."""

    SIGNALS = (signal.SIGTERM, signal.SIGUSR1)

    def __init__(self) -> None:
        self.signum: int | None = None
        self._previous: dict[int, Any] = {}

    def _handle(self, signum: int, _frame: Any) -> None:
        self.signum = signum

    def __bool__(self) -> bool:
        return self.signum is not None

    def __enter__(self) -> StopFlag:
        for sig in self.SIGNALS:
            try:
                self._previous[sig] = signal.signal(sig, self._handle)
            except ValueError:  # not the main thread (an embedding caller): no signal handling
                break
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
