"""The whole loop on the instance emulator, which runs each instance's real user data: the
bootstrap installs the worker bundle and starts the agent under the systemd shim, the agent
runs the job to success on a spot worker and it is charged; a spot notice served by the
instance's metadata endpoint makes the agent checkpoint to S3 before the instance is
terminated, and the job resumes on a replacement from that checkpoint with every epoch."""

from __future__ import annotations

from decimal import Decimal

import pytest

from allocations.models import UsageRecord
from launcher.cloud import clock, faults
from launcher.cloud.client import aws_client
from launcher.cloud.models import CloudTask, Interruption, Node
from launcher.cloud.services import task_launch
from launcher.cloud.workload import TINY, ctxray_argv, stage_synthetic_dataset
from tests.cloud.conftest import TRAINS_TO_END, drive

pytestmark = pytest.mark.django_db(transaction=True)


def _train(allocation, cluster, researcher, epochs: int) -> CloudTask:
    data = stage_synthetic_dataset(cluster=cluster)
    return task_launch(
        allocation=allocation,
        by=researcher,
        instance_type="g5.xlarge",
        argv=ctxray_argv({**TINY, "epochs": epochs}),
        data_prefix=data,
        hours=Decimal("1"),
    )


def _task(task: CloudTask) -> CloudTask:
    return CloudTask.objects.select_related("node").get(pk=task.pk)


def test_a_job_trains_to_success_and_its_instance_time_is_charged(
    allocation, cluster, researcher, emulator
):
    task = _train(allocation, cluster, researcher, epochs=2)
    drive(cluster, lambda: _task(task).state == "running")
    clock.advance(180)  # three billed minutes pass on the worker
    done = drive(
        cluster,
        lambda: _task(task) if _task(task).state in CloudTask.FINAL else None,
        timeout=TRAINS_TO_END,
    )
    assert done.state == "succeeded", done.state_reason
    assert done.progress["epoch"] == 2 and done.progress["state"] == "succeeded"
    metrics = aws_client(cluster).get_json(f"{task.prefix}out/metrics.json")
    assert metrics and metrics["synthetic_data"] is True
    worker = done.node
    charges = UsageRecord.objects.filter(allocation=allocation, detail__node=worker.pk)
    seconds = sum(r.gpu_seconds for r in charges)
    assert seconds >= 120  # one GPU, whole minutes only: at least two of the three the clock moved
    cost = sum(r.cost for r in charges)
    assert float(cost) == pytest.approx(float(Decimal("0.362") * seconds / 3600), abs=0.001)
    assert {r.detail["instance_type"] for r in charges} == {"g5.xlarge"}
    assert all(r.external_id.startswith(f"{worker.instance_id}:") for r in charges)
    assert not UsageRecord.objects.filter(detail__role="head").exists()  # no head node to bill


EPOCHS = 10  # enough that the notice lands mid-training, whatever the load


def test_an_interruption_mid_training_resumes_from_the_checkpoint_with_every_epoch(
    allocation, cluster, researcher, emulator
):
    task = _train(allocation, cluster, researcher, epochs=EPOCHS)
    backend = aws_client(cluster)
    drive(  # two epochs trained and checkpointed: a slice of the whole run, so its bound
        cluster,
        lambda: (
            (_task(task).progress.get("epoch") or 0) >= 2
            and backend.get_json(f"{task.prefix}checkpoint-meta.json")
        ),
        timeout=TRAINS_TO_END,
    )
    first = _task(task).node
    seen = faults.interrupt(
        backend, emulator_root=emulator, task_prefix=task.prefix, instance_id=first.instance_id
    )
    # The agent saw the notice on the metadata endpoint and stopped the job (it checkpointed
    # and exited 75) mid-training; the checkpoint was in S3 before the instance was terminated.
    assert seen["status"]["state"] == "preempted" and seen["status"]["exit_code"] == 75
    assert seen["checkpoint_in_s3"] and seen["checkpoint"]["graceful"] is True
    assert seen["checkpoint"]["instance"] == first.instance_id
    reported = backend.get_json(
        f"{cluster.prefix}instances/{first.instance_id}/spot/instance-action"
    )
    assert reported["action"] == "terminate" and reported["kind"] == "spot/instance-action"
    drive(
        cluster, lambda: Interruption.objects.filter(node=first, replacement__isnull=False).exists()
    )
    done = drive(
        cluster,
        lambda: _task(task) if _task(task).state in CloudTask.FINAL else None,
        timeout=TRAINS_TO_END,
    )
    assert done.state == "succeeded", done.state_reason
    assert done.attempt == 2 and done.node != first
    interruption = Interruption.objects.get(node=first)
    assert interruption.source == "notice" and interruption.resumed_at is not None
    assert 1 <= interruption.checkpoint_epoch < EPOCHS
    assert interruption.work_lost_seconds == 0  # it checkpointed on the notice itself
    assert Node.objects.get(pk=first.pk).state == "interrupted"
    assert done.progress["epoch"] == EPOCHS and done.progress["state"] == "succeeded"
    progress = backend.get_json(f"{task.prefix}out/progress.json")
    assert progress["epoch"] == EPOCHS and progress["epochs"] == EPOCHS
    metrics = backend.get_json(f"{task.prefix}out/metrics.json")
    assert [h["epoch"] for h in metrics["history"]] == list(range(1, EPOCHS + 1))
    status = backend.get_json(f"{task.prefix}status/{done.node.instance_id}.json")
    assert status["state"] == "succeeded" and status["resumed_files"] > 0
    first_log = backend.get_bytes(f"{task.prefix}logs/{first.instance_id}.log").decode()
    second_log = backend.get_bytes(f"{task.prefix}logs/{done.node.instance_id}.log").decode()
    assert first_log and second_log
