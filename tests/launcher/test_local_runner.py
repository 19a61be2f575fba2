"""The local backend against real processes: each job is a detached `python -m
launcher.workloads.ctxray train` in its own folder, limited to the facility's slots, cancelled
with the signal the trainer checkpoints on, charged from its measured wall time."""

from __future__ import annotations

import math
import os
import signal
import time

import pytest

from allocations.models import Event, UsageRecord
from launcher import services, tasks
from launcher.backends.registry import backend_for
from launcher.local import cells
from launcher.local.backend import cell_argv
from launcher.local.supervisor import proc_start_ticks
from launcher.models import Job
from tests.launcher.local_fixtures import (  # noqa: F401
    LONG,
    QUICK,
    cell_of,
    jobs_dir,
    launch,
    local_allocation,
    local_facility,
    poll_until,
    training_started,
)
from tests.waiting import wait_for

pytestmark = pytest.mark.django_db


def _supervisor(job: Job) -> dict:
    return wait_for(
        lambda: cells.read_json(cell_of(job) / cells.PID),
        timeout=60,
        what="the supervisor's pid.json",
    )


def test_a_second_submit_with_the_same_token_finds_the_first_process(local_allocation, researcher):
    job = launch(local_allocation, researcher, LONG)
    services.job_submit(job_id=job.pk)
    job.refresh_from_db()
    assert job.state == "running" and job.scheduler_id == job.token
    first = _supervisor(job)

    again = backend_for(local_allocation.facility).submit(
        facility=local_allocation.facility, jobs=[job], token=job.token
    )

    assert again.already_submitted and again.scheduler_id == job.token
    assert cells.read_json(cell_of(job) / cells.PID)["pid"] == first["pid"]
    assert [
        p.name
        for p in (cell_of(job).parent.parent).iterdir()
        if p.is_dir() and p.name != cells.LEDGER
    ] == [job.token]
    assert proc_start_ticks(first["pid"]) == first["start_ticks"]  # still the same, alive


def test_the_submit_task_returns_with_the_started_job_running_and_the_waiting_one_saying_why(
    local_allocation, researcher
):
    """The backend reports a started process at submission (issue 22: the page said `pending`
    until the next poll, 10 s later): when the submit task returns, no poll has run and the
    job is `running`; a job that found no free slot is `pending` with the reason."""
    first, second, third = (launch(local_allocation, researcher, LONG) for _ in range(3))
    for job in (first, second, third):
        tasks.submit_job.apply(args=[job.pk]).get()

    for job in (first, second):
        job.refresh_from_db()
        assert job.state == "running" and job.started_at is not None, job.state_reason
        assert cells.read_cell(cell_of(job)).phase == "running"
        assert (
            Event.objects.filter(
                object_id=job.pk, to_state="running", content_type__model="job"
            ).count()
            == 1
        )
    third.refresh_from_db()
    assert third.state == "pending"
    assert third.state_reason == "waiting for a free slot (2 of 2 in use)"


def test_cancel_makes_the_trainer_checkpoint_and_stop(local_allocation, researcher):
    job = launch(local_allocation, researcher, LONG)
    services.job_submit(job_id=job.pk)
    poll_until(job, {"running"})
    wait_for(lambda: training_started(job), timeout=240, what="the first training step")
    pid = _supervisor(job)

    services.job_cancel(job=job, by=researcher)

    ended = wait_for(
        lambda: cells.read_json(cell_of(job) / cells.EXIT),
        timeout=120,
        what="exit.json after the cancel",
    )
    job.refresh_from_db()
    assert job.state == "cancelled"
    assert ended["exit_code"] == 75 and ended["signals"] == [signal.SIGTERM]
    assert (cell_of(job) / "out" / "checkpoint.pt").is_file()
    # The supervisor writes exit.json, then exits: both processes are gone soon after (a
    # process of the supervisor's pid since is another one: its start differs).
    wait_for(
        lambda: (
            proc_start_ticks(pid["pid"]) != pid["start_ticks"]
            and proc_start_ticks(pid["child_pid"]) is None
        ),
        timeout=30,
        what="the supervisor's and the trainer's ends",
    )


def test_a_third_job_waits_for_a_slot_then_runs(local_allocation, researcher):
    first, second, third = (launch(local_allocation, researcher, LONG) for _ in range(3))
    for job in (first, second, third):
        services.job_submit(job_id=job.pk)

    poll_until(first, {"running"})
    poll_until(second, {"running"})
    third.refresh_from_db()
    services.jobs_poll(facility_id=local_allocation.facility_id)
    third.refresh_from_db()
    assert third.state == "pending"
    assert third.state_reason == "waiting for a free slot (2 of 2 in use)"
    assert not (cell_of(third) / cells.PID).exists()

    services.job_cancel(job=first, by=researcher)
    wait_for(lambda: (cell_of(first) / cells.EXIT).exists(), timeout=120, what="first job's end")
    poll_until(third, {"running"})
    second.refresh_from_db()
    assert second.state == "running"


def test_usage_is_the_measured_wall_time_times_the_slots_charged_once(local_allocation, researcher):
    # Bounds the test measures itself: the process ran inside [before, after] and trained for
    # at least the trainer's own clock (metrics.json), so the charge lies between the two.
    before = time.time()
    job = launch(local_allocation, researcher, QUICK)
    services.job_submit(job_id=job.pk)
    poll_until(job, {"succeeded"})
    after = time.time()
    job.refresh_from_db()
    trained = job.metrics["measured"]["train_seconds"]

    # The backend offers the same record twice; accounting stores it once.
    assert services.usage_ingest(allocation=local_allocation) == 1
    assert services.usage_ingest(allocation=local_allocation) == 1

    records = list(UsageRecord.objects.filter(allocation=local_allocation))
    assert len(records) == 1
    record = records[0]
    assert record.source == "local"
    assert (
        math.ceil(trained) * job.gpus <= record.gpu_seconds <= math.ceil(after - before) * job.gpus
    )
    assert (
        before - 1 <= record.period_start.timestamp() <= record.period_end.timestamp() <= after + 1
    )
    job.refresh_from_db()
    assert job.gpu_seconds == record.gpu_seconds
    assert job.progress.get("state") == "succeeded" and job.log_tail


def test_a_vanished_process_is_marked_failed_and_charged_for_the_time_it_was_seen_running(
    local_allocation, researcher
):
    job = launch(local_allocation, researcher, LONG)
    services.job_submit(job_id=job.pk)
    poll_until(job, {"running"})
    pid = wait_for(
        lambda: (
            (cells.read_json(cell_of(job) / cells.PID) or {}).get("child_pid")
            and cells.read_json(cell_of(job) / cells.PID)
        ),
        timeout=120,
        what="child pid",
    )
    wait_for(lambda: training_started(job), timeout=120, what="the first training step")
    services.jobs_poll(facility_id=local_allocation.facility_id)  # seen running once more
    seen = cells.read_json(cell_of(job) / cells.SEEN)["at"]
    os.kill(pid["pid"], signal.SIGKILL)  # the supervisor first: nobody writes exit.json
    os.kill(pid["child_pid"], signal.SIGKILL)
    killed = time.time()
    wait_for(lambda: proc_start_ticks(pid["pid"]) is None, timeout=30, what="the kill")

    poll_until(job, {"failed"})
    assert "vanished" in job.state_reason and str(pid["pid"]) in job.state_reason
    services.usage_ingest(allocation=local_allocation)  # the backend offers, accounting stores
    [record] = UsageRecord.objects.filter(allocation=local_allocation)
    assert record.job_id == job.pk and record.detail["vanished"] is True
    # From its start to when it was last seen running (never 0, never past the kill).
    assert (
        math.ceil(seen - pid["started_at"])
        <= record.gpu_seconds
        <= math.ceil(killed - pid["started_at"])
    )
    assert record.gpu_seconds >= 1


def test_several_gpus_run_under_torchrun_with_one_process_each(local_allocation, researcher):
    job = Job(allocation=local_allocation, params=dict(QUICK), gpus=2, token="t" * 12)
    argv = cell_argv(job, "/data")
    assert argv[1:5] == ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
    assert argv[5:8] == ["-m", "launcher.workloads.ctxray", "train"]
    single = cell_argv(Job(allocation=local_allocation, params=dict(QUICK), gpus=1), "/data")
    assert single[1:4] == ["-m", "launcher.workloads.ctxray", "train"]


def test_a_job_the_facility_can_no_longer_fit_fails_at_submission_with_the_reason(
    local_allocation, researcher
):
    """The launch refuses more GPUs than the slots (tests/launcher/test_launch_capacity.py);
    slots taken away between launch and submission still fail the job, not the worker."""
    job = launch(local_allocation, researcher, {**QUICK, "batch_size": 4}, gpus=2)
    facility = local_allocation.facility
    facility.backend_settings = {"slots": 1}
    facility.save()
    services.job_submit(job_id=job.pk)
    job.refresh_from_db()
    assert job.state == "failed" and "needs 2 slots" in job.state_reason


def test_a_sweep_runs_each_cell_as_its_own_process_and_charges_each(local_allocation, researcher):
    grid = {
        "models": ["resnet18"],
        "lrs": [1e-3, 1e-4],
        "lr_steps": [5],
        "weight_decays": [0.0],
        "folds": 1,
    }
    sweep = services.sweep_launch(
        by=researcher,
        allocation=local_allocation,
        grid=grid,
        gpus=1,
        wall_time_minutes=10,
        params=dict(QUICK),
        concurrency=2,
    )
    services.sweep_submit(sweep_id=sweep.pk)
    first, second = sweep.jobs.order_by("array_index")
    poll_until(first, {"succeeded"})
    poll_until(second, {"succeeded"})

    pids = {cells.read_json(cell_of(j) / cells.PID)["pid"] for j in (first, second)}
    assert len(pids) == 2 and cell_of(first).parent == cell_of(second).parent
    assert "--lr 0.001" in (cell_of(first) / cells.LOG).read_text()
    assert "--lr 0.0001" in (cell_of(second) / cells.LOG).read_text()
    services.usage_ingest(allocation=local_allocation)
    assert UsageRecord.objects.filter(allocation=local_allocation).count() == 2


def test_a_job_that_outruns_its_wall_time_is_stopped_and_charged_exactly_the_limit(
    local_allocation, researcher, settings
):
    settings.LOCAL_SECONDS_PER_MINUTE = 0.5  # its 10-minute wall time -> 5 s
    job = launch(local_allocation, researcher, {**LONG, "batch_size": 4}, gpus=2)  # torchrun
    services.job_submit(job_id=job.pk)
    poll_until(job, {"timeout"})
    assert job.state_reason.startswith("stopped at its wall-time limit")
    ended = cells.read_json(cell_of(job) / cells.EXIT)
    assert ended["timed_out"] is True and ended["limit_seconds"] == 5
    assert ended["elapsed_seconds"] > 5  # it ran to the limit and a little past (checkpoint)

    services.usage_ingest(allocation=local_allocation)  # the backend offers, accounting stores
    [record] = UsageRecord.objects.filter(allocation=local_allocation)
    assert record.gpu_seconds == 5 * 2  # the limit x GPUs, not what it ran past the limit


def test_a_suspended_allocation_stops_its_running_local_jobs(
    local_allocation, researcher, admin, django_capture_on_commit_callbacks
):
    from allocations.services import allocation_suspend

    job = launch(local_allocation, researcher, LONG)
    services.job_submit(job_id=job.pk)
    poll_until(job, {"running"})
    with django_capture_on_commit_callbacks(execute=True):
        allocation_suspend(allocation=local_allocation, by=admin, comment="Audit.")
    poll_until(job, {"cancelled"})
    assert job.state_reason == "stopped: the allocation is suspended"
    wait_for(lambda: (cell_of(job) / cells.EXIT).exists(), timeout=120, what="the process's end")
