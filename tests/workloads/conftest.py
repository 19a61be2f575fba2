"""Shared tiny datasets for the workload tests. One torch thread: on a shared 2-core machine it
is faster than two, and the resume test compares runs that must use the same thread count."""

import os

import pytest
import torch

from launcher.workloads.ctxray.synth import synthesize

os.environ["OMP_NUM_THREADS"] = "1"  # inherited by the subprocesses the tests start
torch.set_num_threads(1)


@pytest.fixture(scope="session")
def ct_slices(tmp_path_factory):
    """48 synthetic CT slices (3 per patient), 48 px, in Hounsfield units."""
    out = tmp_path_factory.mktemp("ct_slices")
    synthesize(str(out), "ct", n=48, size=48, seed=3)
    return out


@pytest.fixture(scope="session")
def ct_learnable(tmp_path_factory):
    """192 synthetic CT slices (64 patients) at the size the test trains at: enough for a short
    training to learn the lesions whatever the seed, with 42 validation slices to measure it on.
    (96 slices left 24 for validation, and accuracy over seeds ranged 0.46-0.92.)"""
    out = tmp_path_factory.mktemp("ct_learnable")
    synthesize(str(out), "ct", n=192, size=32, seed=3)
    return out
