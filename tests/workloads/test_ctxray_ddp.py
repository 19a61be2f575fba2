"""Real multi-GPU, on CPU: a job with gpus=2 trains under torchrun with two DDP processes
(gloo), reports world_size 2, writes its metrics once (rank 0), and when the scheduler's
checkpoint signal arrives every process stops at the same step, rank 0 checkpoints, the bundle
exits 75, and a resume with two processes finishes the run from that checkpoint.

Driven through the job bundle Slurm runs (launcher/bundles.py: job.sh -> run.py -> torchrun),
here as a local process so the DDP part is tested apart from the scheduler."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from launcher import bundles

CELL = {
    "model": "resnet18",
    "epochs": 2,
    "size": 32,
    "batch_size": 4,
    "bootstrap": 50,
    "progress_every": 1,
    "threads": 1,
    "seed": 1,
    "deterministic": True,
}
PARAMS = {"dataset": "synthetic-ct", "synthetic_n": 24, "size": 32}
SITE = str(
    Path(sys.prefix)
    / "lib"
    / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    / "site-packages"
)


def _bundle(tmp_path: Path, **cell) -> Path:
    folder = tmp_path / "job"
    folder.mkdir()
    bundles.write_bundle(cells=[{"index": 0, **CELL, **cell}], params=PARAMS, into=folder, gpus=2)
    return folder


def _start(folder: Path) -> subprocess.Popen:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env.pop("SLURM_ARRAY_TASK_ID", None)
    return subprocess.Popen(
        ["bash", "job.sh", sys.executable, SITE],
        cwd=folder,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _progress(folder: Path) -> dict:
    with contextlib.suppress(FileNotFoundError, json.JSONDecodeError):
        return json.loads((folder / "out/0/progress.json").read_text())
    return {}


def test_two_gpus_train_as_two_ddp_processes_and_report_world_size_two(tmp_path):
    folder = _bundle(tmp_path)
    spec = json.loads((folder / "job.json").read_text())
    assert spec["nproc"] == 2

    proc = _start(folder)
    output, _ = proc.communicate()

    assert proc.returncode == 0, output
    assert "(torchrun, 2 processes)" in output
    progress = _progress(folder)
    assert progress["state"] == "succeeded" and progress["world_size"] == 2
    assert progress["epoch"] == 2 and progress["steps_per_epoch"] >= 1
    metrics = json.loads((folder / "out/0/metrics.json").read_text())
    assert metrics["runtime"]["world_size"] == 2 and len(metrics["history"]) == 2
    # Each rank trained on its own half: 2 ranks x batch 4 per step.
    assert progress["steps_per_epoch"] == -(-metrics["samples"]["train"] // 2) // 4


def test_the_checkpoint_signal_stops_both_processes_and_the_resume_finishes(tmp_path):
    folder = _bundle(tmp_path, epochs=4)
    proc = _start(folder)
    while proc.poll() is None and not (
        _progress(folder).get("state") == "running" and _progress(folder).get("step", 0) >= 1
    ):
        time.sleep(0.1)  # bounded by the process: it ends on its own if no signal comes
    assert proc.poll() is None, proc.communicate()[0]
    proc.send_signal(signal.SIGUSR1)  # what Slurm's --signal=B:USR1 sends to the batch script
    output, _ = proc.communicate()

    assert proc.returncode == 75, output
    stopped = _progress(folder)
    assert stopped["state"] == "preempted" and stopped["world_size"] == 2
    assert (folder / "out/0/checkpoint.pt").exists()

    assert stopped["epoch"] < 4
    # The resumed attempt (run.py passes --resume): both ranks load the checkpoint and finish.
    resumed = _start(folder)
    output, _ = resumed.communicate()
    assert resumed.returncode == 0, output
    done = _progress(folder)
    assert done["state"] == "succeeded" and done["world_size"] == 2
    metrics = json.loads((folder / "out/0/metrics.json").read_text())
    assert len(metrics["history"]) == 4
    shutil.rmtree(folder / "out", ignore_errors=True)
