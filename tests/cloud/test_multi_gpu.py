"""A cloud job with gpus > 1 runs the trainer under torchrun with one DDP process per GPU it
asked for (the agent starts exactly this argument list on the worker)."""

from __future__ import annotations

import pytest

from launcher import services
from launcher.cloud.models import CloudTask
from launcher.cloud.workload import ctxray_argv

pytestmark = pytest.mark.django_db(transaction=True)


def test_one_gpu_runs_the_trainer_itself_and_two_run_it_under_torchrun():
    assert ctxray_argv({"model": "resnet18"})[:3] == ["python", "-m", "launcher.workloads.ctxray"]
    argv = ctxray_argv({"model": "resnet18"}, gpus=2)
    assert argv[:7] == [
        "python",
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node=2",
        "-m",
        "launcher.workloads.ctxray",
    ]
    assert argv[7:10] == ["train", "--data", "{data}"] and "--resume" in argv


def test_a_two_gpu_cloud_job_starts_two_trainer_processes(researcher, allocation, cluster):
    job = services.job_launch(
        by=researcher,
        allocation=allocation,
        gpus=2,
        wall_time_minutes=30,
        params={
            "model": "resnet18",
            "epochs": 1,
            "batch_size": 4,
            "dataset": "synthetic-ct",
            "synthetic_n": 24,
        },
    )
    task = CloudTask.objects.get(job_id=job.pk)
    assert task.gpus >= 2 and "--nproc_per_node=2" in task.argv
    assert task.argv[task.argv.index("-m", 3) + 1] == "launcher.workloads.ctxray"
