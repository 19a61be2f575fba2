"""Checkpoints load with torch.load(weights_only=True): a file planted in a job's folder cannot
run code when the trainer resumes, and everything the trainer saves loads that way."""

from __future__ import annotations

import pickle
import random

import numpy as np
import pytest
import torch

from launcher.workloads.ctxray import checkpoint as ckpt


class _Planted:
    """What an attacker would pickle: unpickling it calls a function of their choosing."""

    def __reduce__(self):
        return (print, ("code ran while loading a checkpoint",))


def test_a_checkpoint_that_would_run_code_is_refused(tmp_path, capsys):
    path = tmp_path / "checkpoint.pt"
    torch.save({"model": {}, "trap": _Planted()}, path)

    with pytest.raises(pickle.UnpicklingError):
        ckpt.load(str(path))
    assert "code ran" not in capsys.readouterr().out


def test_the_random_states_round_trip_through_a_weights_only_checkpoint(tmp_path):
    random.seed(5), np.random.seed(5), torch.manual_seed(5)
    np.random.standard_normal()  # leaves a cached gaussian in numpy's state
    path = str(tmp_path / "checkpoint.pt")
    ckpt.save(path, {"rng": ckpt.rng_state(), "loop": {"epoch": 1, "best_loss": float("inf")}})
    expected = (random.random(), np.random.standard_normal(), torch.rand(1).item())

    random.seed(99), np.random.seed(99), torch.manual_seed(99)
    ckpt.set_rng_state(ckpt.load(path)["rng"])

    assert (random.random(), np.random.standard_normal(), torch.rand(1).item()) == expected
