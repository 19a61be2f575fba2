"""What a cloud worker runs for a CT/X-ray training job, and the shared data it reads."""

from __future__ import annotations

import tempfile
from pathlib import Path

from launcher.workloads.ctxray.synth import synthesize

from .client import aws_client
from .models import Cluster

# Flags a job may set, passed as separate arguments (never through a shell).
TRAIN_FLAGS = (
    "model",
    "epochs",
    "size",
    "batch-size",
    "lr",
    "lr-step",
    "weight-decay",
    "patience",
    "folds",
    "fold",
    "seed",
    "bootstrap",
    "progress-every",
    "threads",
)


def ctxray_argv(params: dict, gpus: int = 1) -> list[str]:
    """The trainer's argument list for these job parameters; `--resume` always, so a worker
    that replaces an interrupted one continues from the checkpoint it finds in S3. With
    `gpus` > 1 the trainer runs under torchrun, one DDP process per GPU (NCCL on CUDA, gloo
    on CPU), so every GPU the job pays for trains."""
    launcher = ["python", "-m"]
    if gpus > 1:
        launcher += ["torch.distributed.run", "--standalone", f"--nproc_per_node={int(gpus)}", "-m"]
    argv = [
        *launcher,
        "launcher.workloads.ctxray",
        "train",
        "--data",
        "{data}",
        "--out",
        "{out}",
        "--resume",
    ]
    for flag in TRAIN_FLAGS:
        key = flag.replace("-", "_")
        if params.get(key) is not None:
            argv += [f"--{flag}", str(params[key])]
    if params.get("deterministic"):
        argv.append("--deterministic")
    return argv


TINY = {
    "model": "resnet18",
    "size": 32,
    "batch_size": 8,
    "lr": 1e-3,
    "bootstrap": 50,
    "progress_every": 1,
    "seed": 1,
    "threads": 1,
    "deterministic": True,
}


def stage_synthetic_dataset(
    *, cluster: Cluster, name: str = "ct-tiny", n: int = 48, size: int = 48, modality: str = "ct"
) -> str:
    """Write a deterministic synthetic dataset to the cluster's shared prefix (the head
    node's shared data). Idempotent. Returns the data prefix."""
    prefix = f"{cluster.prefix}data/{name}/"
    backend = aws_client(cluster)
    if backend.list_keys(prefix):
        return prefix
    with tempfile.TemporaryDirectory() as tmp:
        synthesize(tmp, modality, n=n, size=size, seed=3)
        backend.upload_dir(Path(tmp), prefix)
    return prefix


SYNTHETIC = {"synthetic-ct": "ct", "synthetic-xray": "xray"}


def job_data_prefix(*, cluster: Cluster, params: dict) -> str:
    """Where a job's data lives in S3: a synthetic dataset (`dataset` synthetic-ct or
    synthetic-xray, with `synthetic_n` images) staged once per cluster, or a dataset already
    under the cluster's `data/` prefix (`dataset` = its name there), or a project dataset
    resolved at launch (`data_path`: a key prefix under the facility's `storage_root`,
    launcher/services/launch.py)."""
    if params.get("data_path"):
        return f"{str(params['data_path']).strip('/')}/"
    dataset = params.get("dataset") or "synthetic-ct"
    if dataset in SYNTHETIC:
        n = int(params.get("synthetic_n") or 48)
        return stage_synthetic_dataset(
            cluster=cluster, name=f"{dataset}-{n}", n=n, modality=SYNTHETIC[dataset]
        )
    return f"{cluster.prefix}data/{dataset.strip('/').split('/')[-1]}/"
