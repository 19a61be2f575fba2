"""Calibration of the recommender on real runs: predict, train, measure back, predict again.

For a few small CT training configurations on this machine's `local-cpu` node type, in two
rounds: (1) ask `benchmarks.estimates.job_prediction` what one run will take (from the seeded
catalogue: the harness's CPU results), run the real trainer in a subprocess and time it from
start to exit (what a scheduler charges), store the run's own figures as a `job` result
(`benchmark_result_from_job`, as the job monitor does); (2) predict the same configurations
again, now from those results. Prints each run and the calibration table per round: the
recommender's error on whole jobs, and how it changes once the portal has measured them.

Runs against a throwaway SQLite database under var/ (DATABASE_URL is overridden), with one
torch thread per run (this VM has 2 shared cores).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DB = ROOT / "var" / "bench-calibration.sqlite3"
os.environ["DATABASE_URL"] = f"sqlite:///{DB}"
os.environ.setdefault("DEBUG", "true")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

# (model, size, batch, images, epochs): small enough for a 2-core VM, long enough to time.
CONFIGS = [
    ("resnet18", 32, 8, 48, 2),
    ("resnet18", 64, 8, 48, 2),
    ("densenet121", 32, 8, 48, 2),
    ("resnet50", 32, 8, 48, 2),
]


def _setup():
    import django
    from django.core.management import call_command

    DB.parent.mkdir(exist_ok=True)
    DB.unlink(missing_ok=True)
    django.setup()
    call_command("migrate", verbosity=0)
    from allocations.demo import seed_catalogue
    from benchmarks.demo import seed

    seed_catalogue()
    seed()
    from allocations.models import NodeType

    return NodeType.objects.get(name="local-cpu")


def _run(model: str, size: int, batch: int, n: int, epochs: int, work: Path) -> tuple[float, dict]:
    """Synthesise and train in one subprocess, as a job does; wall seconds and metrics."""
    import json

    data, out = work / "data", work / "out"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    py = [sys.executable, "-m", "launcher.workloads.ctxray"]
    started = time.monotonic()
    subprocess.run(
        [
            *py,
            "synth",
            "--out",
            str(data),
            "--modality",
            "ct",
            "--n",
            str(n),
            "--size",
            str(size),
            "--seed",
            "0",
        ],
        check=True,
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
    )
    subprocess.run(
        [
            *py,
            "train",
            "--data",
            str(data),
            "--out",
            str(out),
            "--model",
            model,
            "--size",
            str(size),
            "--batch-size",
            str(batch),
            "--epochs",
            str(epochs),
            "--threads",
            "1",
            "--bootstrap",
            "50",
            "--device",
            "cpu",
        ],
        check=True,
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
    )
    return time.monotonic() - started, json.loads((out / "metrics.json").read_text())


def main() -> int:
    node = _setup()
    from benchmarks.calibration import CalibrationPoint, calibration_table
    from benchmarks.estimates import job_prediction
    from benchmarks.services import benchmark_result_from_job

    print(
        f"{len(CONFIGS)} configurations x 2 rounds on {node.name} "
        f"({os.cpu_count()} CPUs, shared), torch threads 1"
    )
    print(
        f"    {'round':<6}{'job':<28}{'source':<13}{'predicted s':>12}{'measured s':>11}"
        f"{'error':>8}"
    )
    for round_ in (1, 2):
        points = []
        for i, (model, size, batch, n, epochs) in enumerate(CONFIGS):
            params = {
                "model": model,
                "size": size,
                "batch_size": batch,
                "synthetic_n": n,
                "epochs": epochs,
                "dataset": "synthetic-ct",
            }
            found = job_prediction(node_type=node, params=params, gpus=1)
            with tempfile.TemporaryDirectory() as tmp:
                seconds, metrics = _run(model, size, batch, n, epochs, Path(tmp))
            label = f"{model} {size}px b{batch} x{epochs}"
            predicted = found.hours * 3600 if found.hours else float("nan")
            print(
                f"    {round_:<6}{label:<28}{found.source:<13}{predicted:>12.1f}"
                f"{seconds:>11.1f}{(predicted - seconds) / seconds:>+8.0%}",
                flush=True,
            )
            points.append(
                CalibrationPoint(
                    node.name + " (local)", f"{model}-2d", found.hours or 0.0, seconds / 3600, label
                )
            )
            measured = metrics["measured"]
            benchmark_result_from_job(
                key=f"bench-{round_}-{i}",
                node_type=node,
                model=model,
                dims=2,
                precision="fp32",
                gpus=1,
                batch_size=batch,
                image_size=size,
                throughput=measured["train_images_per_s"],
                peak_memory_gb=measured["peak_memory_gb"],
                software=measured["software"],
                measured_at=None,
                predicted_hours=found.hours,
                measured_hours=seconds / 3600,
                overhead_seconds=max(seconds - measured["train_seconds"], 0.0),
            )
        print(
            f"  calibration, round {round_} "
            f"({'from the catalogue' if round_ == 1 else 'after measuring round 1 back'}):"
        )
        print(f"    {'workload':<18}{'jobs':>5}{'median |error|':>16}{'bias':>9}{'worst':>9}")
        for row in calibration_table(points):
            pct = row.percent()
            print(
                f"    {row.workload:<18}{row.jobs:>5}{pct['abs']:>16}{pct['bias']:>9}"
                f"{pct['worst']:>9}"
            )
        errors = [abs(p.predicted_hours - p.measured_hours) / p.measured_hours for p in points]
        print(f"    all jobs: median |error| {statistics.median(errors):.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
