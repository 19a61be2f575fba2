"""Job bundles: what is staged to the compute side for a training job or a sweep.

A bundle is a folder holding
  job.sh    the batch script: `job.sh PYTHON PYTHONPATH`; it execs run.py with that interpreter
  run.py    picks its cell (SLURM_ARRAY_TASK_ID, 0 for a single job), makes the synthetic
            dataset once if asked (under a lock, shared by every cell), then execs
            `python -m launcher.workloads.ctxray train ...` so the trainer itself receives
            Slurm's --signal (it checkpoints on SIGUSR1/SIGTERM and exits 75)
  job.json  the cells' argument lists and the data spec (user values live only here, as JSON)
  pkg/      the workload package (launcher/__init__.py, launcher/workloads/, no Django)

Each cell writes OUT = out/<index>/ (progress.json, metrics.json, checkpoints).
"""
from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from . import sweepgrid

WORKLOAD_SRC = Path(__file__).resolve().parent / "workloads"
SYNTHETIC = {"synthetic-ct": "ct", "synthetic-xray": "xray"}

_JOB_SH = """#!/bin/bash
# Written by the portal. Arguments: PYTHON PYTHONPATH. No user value appears in this text.
set -u
export PYTHONPATH="$PWD/pkg${2:+:$2}"
exec "$1" run.py
"""

_RUN_PY = '''"""Run one cell of this bundle (written by the portal; standard library only)."""
import fcntl, json, os, subprocess, sys

spec = json.load(open("job.json"))
index = int(os.environ.get("SLURM_ARRAY_TASK_ID") or 0)
cell = spec["cells"][index]
if spec.get("synth"):
    with open(".synth.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(os.path.join(spec["data"], "dataset.json")):
            subprocess.run([sys.executable, "-m", "launcher.workloads.ctxray", "synth", *spec["synth"]],
                           check=True)
print(f"portal: cell {index}: {' '.join(cell)}", flush=True)
os.execv(sys.executable, [sys.executable, "-m", "launcher.workloads.ctxray", *cell])
'''

# Keys of a job's params that map onto `ctxray train` flags (others are portal-side).
TRAIN_KEYS = ("model", "epochs", "lr", "lr_step", "weight_decay", "batch_size", "patience",
              "size", "dims", "folds", "fold", "seed", "deterministic", "threads", "workers",
              "augment", "lung_crop", "bootstrap", "progress_every")


def out_dir(index: int) -> str:
    return f"out/{index}"


def data_spec(params: Mapping[str, Any]) -> tuple[str, list[str] | None]:
    """(data path on the compute side, synth arguments or None) for a job's `dataset`."""
    dataset = params.get("dataset", "synthetic-ct")
    if dataset in SYNTHETIC:
        n, size, seed = params.get("synthetic_n", 24), params.get("size", 32), params.get("seed", 0)
        return "data", ["--out", "data", "--modality", SYNTHETIC[dataset], "--n", str(n),
                        "--size", str(max(int(size), 16)), "--seed", str(seed)]
    return str(dataset), None


def cell_args(cell: Mapping[str, Any], index: int, data: str) -> list[str]:
    """`ctxray train` arguments for one cell; --resume so a requeued cell continues."""
    return [*sweepgrid.cell_argv(cell, data, out_dir(index)), "--resume", "--device", "auto"]


def single_cell(params: Mapping[str, Any]) -> dict[str, Any]:
    """A job's params as a sweep-like cell (only the train keys that were given)."""
    return {"index": 0, **{k: params[k] for k in TRAIN_KEYS if k in params}}


def write_bundle(*, cells: Sequence[Mapping[str, Any]], params: Mapping[str, Any],
                 into: Path | None = None) -> Path:
    """Write a bundle folder for these cells (one for a job, all of a sweep's) and return it.
    The caller removes it after staging (`shutil.rmtree`)."""
    folder = Path(into or tempfile.mkdtemp(prefix="portal-bundle-"))
    data, synth = data_spec(params)
    spec = {"cells": [cell_args(c, i, data) for i, c in enumerate(cells)], "data": data,
            "synth": synth}
    (folder / "job.json").write_text(json.dumps(spec, indent=1))
    (folder / "job.sh").write_text(_JOB_SH)
    (folder / "job.sh").chmod(0o755)
    (folder / "run.py").write_text(_RUN_PY)
    pkg = folder / "pkg" / "launcher"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    shutil.copytree(WORKLOAD_SRC, pkg / "workloads",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "requirements*.txt"))
    return folder
