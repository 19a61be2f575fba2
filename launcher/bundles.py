"""Job bundles: what is staged to the compute side for a training job or a sweep.

A bundle is a folder holding
  job.sh    the batch script: `job.sh PYTHON PYTHONPATH`; it execs run.py with that interpreter
  run.py    picks its cell (SLURM_ARRAY_TASK_ID, 0 for a single job), makes the synthetic
            dataset once if asked (under a lock, shared by every cell), then execs
            `python -m launcher.workloads.ctxray train ...` so the trainer itself receives
            Slurm's --signal (it checkpoints on SIGUSR1/SIGTERM and exits 75); for a job with
            N > 1 GPUs it runs `python -m torch.distributed.run --standalone
            --nproc_per_node=N -m launcher.workloads.ctxray train ...` instead (DDP, one process
            per GPU), passes Slurm's signal on to the trainer processes and exits 75 when they
            checkpointed
  job.json  the cells' argument lists (`cell_argv`: a cell's params as `ctxray train` flags) and
            the data spec (user values live only here, as JSON)
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

from . import params as launch_params
from .backends.contract import BackendError

WORKLOAD_SRC = Path(__file__).resolve().parent / "workloads"
SYNTHETIC = launch_params.SYNTHETIC

_JOB_SH = """#!/bin/bash
# Written by the portal. Arguments: PYTHON PYTHONPATH. No user value appears in this text.
# The job runs as its member's cluster login in a folder owned by the service account (mode
# 700) and shared with that member alone by a POSIX ACL: everything the job writes
# (checkpoints, metrics, logs) is private to the member and the service account, out of
# reach of other members and other accounts on the cluster (docs/security.md).
umask 077
set -u
export PYTHONPATH="$PWD/pkg${2:+:$2}"
exec "$1" run.py
"""

_RUN_PY = '''"""Run one cell of this bundle (written by the portal; standard library only)."""
import fcntl, json, os, signal, subprocess, sys

spec = json.load(open("job.json"))
index = int(os.environ.get("SLURM_ARRAY_TASK_ID") or 0)
cell = spec["cells"][index]
nproc = int(spec.get("nproc") or 1)
if spec.get("synth"):
    with open(".synth.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(os.path.join(spec["data"], "dataset.json")):
            subprocess.run([sys.executable, "-m", "launcher.workloads.ctxray", "synth", *spec["synth"]],
                           check=True)
print(f"portal: cell {index}: {' '.join(cell)}" + (f" (torchrun, {nproc} processes)" if nproc > 1 else ""),
      flush=True)
trainer = ["-m", "launcher.workloads.ctxray", *cell]
if nproc == 1:
    os.execv(sys.executable, [sys.executable, *trainer])  # the trainer gets Slurm's --signal itself

# One process per GPU under torchrun (DDP: NCCL on CUDA, gloo on CPU). Slurm's --signal (USR1)
# reaches this script only: pass it to every trainer process (torchrun's children, each in its
# own session), which checkpoints and exits 75; torchrun then ends and reports them.
child = subprocess.Popen([sys.executable, "-m", "torch.distributed.run", "--standalone",
                          f"--nproc_per_node={nproc}", *trainer])

def workers():
    found = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and int(open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()[1]) == child.pid:
                found.append(int(entry))
        except (OSError, ValueError, IndexError):
            pass
    return found

def forward(signum, frame):
    for pid in workers():
        try:
            os.kill(pid, signal.SIGUSR1)
        except ProcessLookupError:
            pass

signal.signal(signal.SIGUSR1, forward)
signal.signal(signal.SIGTERM, forward)
code = child.wait()
out = cell[cell.index("--out") + 1]
try:
    state = json.load(open(os.path.join(out, "progress.json"))).get("state")
except (OSError, ValueError):
    state = None
sys.exit(75 if state == "preempted" else 0 if state == "succeeded" and code == 0 else (code or 1))
'''

# Keys of a job's params that map onto `ctxray train` flags (the rest, dataset and synthetic_n,
# are portal-side): launcher/params.py's table, the one list of training parameters.
TRAIN_KEYS = tuple(k for k in launch_params.PARAMS if k != "synthetic_n")


def out_dir(index: int) -> str:
    return f"out/{index}"


def data_spec(params: Mapping[str, Any]) -> tuple[str, list[str] | None]:
    """(data path on the compute side, synth arguments or None) for a job's `dataset`: the
    synthetic set's generator, or the path the portal resolved and confined at launch
    (`data_path`, launcher/services/launch.py; a user never sets it)."""
    if params.get("data_path"):
        return str(params["data_path"]), None
    dataset = params.get("dataset", "synthetic-ct")
    if dataset in SYNTHETIC:
        n, size, seed = params.get("synthetic_n", 24), params.get("size", 32), params.get("seed", 0)
        return "data", [
            "--out",
            "data",
            "--modality",
            SYNTHETIC[dataset],
            "--n",
            str(n),
            "--size",
            str(max(int(size), 16)),
            "--seed",
            str(seed),
        ]
    # A job from before datasets were registered (a raw path): never run it as it stands.
    raise BackendError(
        f"dataset {dataset!r} is not a registered dataset of the project", permanent=True
    )


def data_root_args(params: Mapping[str, Any]) -> list[str]:
    """`--data-root <project folder>` for a registered dataset (`data_root`, resolved with
    `data_path` at launch): the trainer checks again on the node, when it starts, that the
    data lies inside it (launcher/workloads/ctxray/config.py)."""
    if params.get("data_path") and params.get("data_root"):
        return ["--data-root", str(params["data_root"])]
    return []


def _flag(key: str) -> str:
    return "--" + key.replace("_", "-")


def cell_argv(cell: Mapping[str, Any], data: str, out: str) -> list[str]:
    """Arguments for ``python -m launcher.workloads.ctxray`` that run this cell (an argument
    list, never a shell string: quote with shlex.join when a script needs one line)."""
    argv = ["train", "--data", data, "--out", out]
    for key, value in cell.items():
        if (
            key == "index"
            or (key == "folds" and value == 1)
            or (key == "fold" and cell.get("folds", 1) == 1)
        ):
            continue
        if isinstance(value, bool):
            argv.append(_flag(key) if value else "--no-" + key.replace("_", "-"))
            if key == "deterministic" and not value:
                argv.pop()  # deterministic has no --no- form; off is the default
        else:
            text = repr(value) if isinstance(value, float) else str(value)
            # "--window=-500,1500": a value starting with '-' must be attached to its flag.
            argv += [f"{_flag(key)}={text}"] if text.startswith("-") else [_flag(key), text]
    return argv


def cell_args(cell: Mapping[str, Any], index: int, data: str) -> list[str]:
    """`ctxray train` arguments for one cell; --resume so a requeued cell continues."""
    return [*cell_argv(cell, data, out_dir(index)), "--resume", "--device", "auto"]


def single_cell(params: Mapping[str, Any]) -> dict[str, Any]:
    """A job's params as a sweep-like cell (only the train keys that were given)."""
    return {"index": 0, **{k: params[k] for k in TRAIN_KEYS if k in params}}


def write_bundle(
    *,
    cells: Sequence[Mapping[str, Any]],
    params: Mapping[str, Any],
    into: Path | None = None,
    gpus: int = 1,
    indices: Sequence[int] | None = None,
) -> Path:
    """Write a bundle folder for these cells (one for a job, all of a sweep's) and return it.
    With `gpus` > 1 each cell trains under torchrun with one process per GPU (what Slurm
    charges for is what runs). With `indices` (a staged sweep's batch: launcher/services/
    sweeps.py) cell i is array task indices[i]: the list is indexed by task id, the other
    places empty. The caller removes it after staging (`shutil.rmtree`)."""
    folder = Path(into or tempfile.mkdtemp(prefix="portal-bundle-"))
    data, synth = data_spec(params)
    root = data_root_args(params)
    tasks = list(indices) if indices is not None else list(range(len(cells)))
    listed: list[list[str] | None] = [None] * (max(tasks, default=-1) + 1)
    for task, c in zip(tasks, cells):
        listed[task] = [*cell_args(c, task, data), *root]
    spec = {"cells": listed, "data": data, "synth": synth, "nproc": max(int(gpus), 1)}
    (folder / "job.json").write_text(json.dumps(spec, indent=1))
    (folder / "job.sh").write_text(_JOB_SH)
    (folder / "job.sh").chmod(0o755)
    (folder / "run.py").write_text(_RUN_PY)
    pkg = folder / "pkg" / "launcher"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    shutil.copytree(
        WORKLOAD_SRC,
        pkg / "workloads",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "requirements*.txt"),
    )
    return folder
