"""The ledger kept as data: every write path moves the allocation's ledger columns exactly as a
recomputation from the records says (charge, reserve, release, top-up, expiry, closing, job
failure, preemption; cloud stop is in tests/cloud/test_ledger.py), and the beat task corrects
and audits a drift."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.utils import timezone

from allocations import tasks as allocation_tasks
from allocations.ledger import Figures, ledger_recomputed, ledger_stored
from allocations.models import Allocation, Event, UsageRecord
from allocations.services import allocation_close, allocation_expire, usage_record_many
from allocations.services.allocations import allocation_top_up
from launcher import services, tasks
from launcher.backends.contract import Observation
from launcher.models import Job
from launcher.services.accounting import usage_ingest_records
from launcher.services.resume import preempt_updates
from launcher.slurm.records import UsageRow
from launcher.slurm.usage import usage_records
from tests.factories import AllocationFactory, FacilityFactory

pytestmark = pytest.mark.django_db

PARAMS = {"model": "resnet18", "epochs": 1}
S = Job.State
GRID = {
    "models": ["resnet18"],
    "lrs": [0.001, 0.0001],
    "lr_steps": [10],
    "weight_decays": [0.0001],
    "folds": 1,
}


@pytest.fixture(autouse=True)
def no_submission(monkeypatch):
    monkeypatch.setattr(tasks.submit_job, "delay", lambda pk: None)
    monkeypatch.setattr(tasks.submit_sweep, "delay", lambda pk: None)


@pytest.fixture
def allocation(project):
    facility = FacilityFactory(slug="local-site", backend="local")
    return AllocationFactory(
        project=project, facility=facility, gpu_hours=Decimal("40"), budget=Decimal("500")
    )


def usage_ingest_rows(*, allocation, rows):
    """What the Slurm backend's usage() and the one accounting service do with sacct rows."""
    return usage_ingest_records(
        allocation=allocation, records=usage_records(allocation=allocation, rows=rows)
    )


def columns(allocation: Allocation) -> Figures:
    """The stored columns, after asserting they are what the records say."""
    stored = ledger_stored(allocation_ids=[allocation.pk])[allocation.pk]
    assert stored == ledger_recomputed(allocation_ids=[allocation.pk]).get(allocation.pk, Figures())
    return stored


def launch(researcher, allocation, minutes=60) -> Job:
    return services.job_launch(
        by=researcher, allocation=allocation, gpus=1, wall_time_minutes=minutes, params=PARAMS
    )


def to_running(job: Job) -> None:
    services.job_move(job=job, to=S.SUBMITTING)
    services.job_move(job=job, to=S.PENDING, scheduler_id=str(1000 + job.pk))
    services.job_move(job=job, to=S.RUNNING)


def test_every_write_path_keeps_the_columns_equal_to_the_recomputation(researcher, allocation):
    assert columns(allocation) == Figures()

    # Reserve: a job and a sweep reserve their estimates.
    job = launch(researcher, allocation)
    assert columns(allocation).gpu_seconds_reserved == job.estimate_gpu_hours * 3600 > 0
    sweep = services.sweep_launch(
        by=researcher, allocation=allocation, grid=GRID, gpus=1, wall_time_minutes=30, params=PARAMS
    )
    cells = list(sweep.jobs.order_by("array_index"))
    reserved = columns(allocation).gpu_seconds_reserved
    assert reserved == sum(j.estimate_gpu_hours for j in [job, *cells]) * 3600

    # Charge: a record attributed to a running job replaces part of its reservation.
    to_running(job)
    now = timezone.now()
    usage_record_many(
        [
            UsageRecord(
                allocation=allocation,
                source="local",
                external_id="part",
                period_start=now,
                period_end=now,
                gpu_seconds=600,
                cost=Decimal("1.5"),
                job_id=job.pk,
            )
        ]
    )
    after = columns(allocation)
    assert (after.gpu_seconds_used, after.spend) == (600, Decimal("1.5"))
    assert after.gpu_seconds_reserved == reserved - 600
    # The same record again charges nothing.
    usage_record_many(
        [
            UsageRecord(
                allocation=allocation,
                source="local",
                external_id="part",
                period_start=now,
                period_end=now,
                gpu_seconds=600,
                cost=Decimal("1.5"),
                job_id=job.pk,
            )
        ]
    )
    assert columns(allocation) == after

    # Release: the job ends; its final sacct-style charge is copied onto it (accounting).
    services.job_move(job=job, to=S.SUCCEEDED, finished_at=timezone.now())
    released = columns(allocation)
    assert released.gpu_seconds_reserved == sum(j.estimate_gpu_hours for j in cells) * 3600
    rows = [
        UsageRow(
            job_id=job.scheduler_id,
            step="",
            account="a",
            state="COMPLETED",
            elapsed_seconds=900,
            gpus=1,
            start=now - dt.timedelta(minutes=15),
            end=now,
        )
    ]
    usage_ingest_rows(allocation=Allocation.objects.get(pk=allocation.pk), rows=rows)
    assert columns(allocation).gpu_seconds_used == 600 + 900

    # Job failure and preemption (the estimate is re-based: one more attempt reserved).
    first, second = cells
    to_running(first)
    services.job_observe(
        job=first,
        observation=Observation(state=S.FAILED, reason="oom", exit_code=1, elapsed_seconds=30),
    )
    first.refresh_from_db()
    assert first.state == S.FAILED
    columns(allocation)
    to_running(second)
    services.job_move(
        job=second,
        to=S.PREEMPTED,
        **preempt_updates(second, Observation(state=S.PREEMPTED, elapsed_seconds=120)),
    )
    assert columns(allocation).gpu_seconds_reserved == second.estimate_gpu_hours * 3600 - 120

    # Top-up, expiry, closing (its open work cancelled).
    allocation_top_up(allocation=allocation, gpu_hours=10, by=None)
    columns(allocation)
    allocation.refresh_from_db()
    allocation_expire(allocation=allocation)
    columns(allocation)
    allocation_close(allocation=Allocation.objects.get(pk=allocation.pk), comment="done")
    services.job_move(job=second, to=S.CANCELLED)
    final = columns(allocation)
    assert final.gpu_seconds_reserved == 0 and final.cost_reserved == 0
    assert final.gpu_seconds_used == 1500

    # Nothing drifted: the beat task corrects nothing and audits nothing.
    events = Event.objects.count()
    assert allocation_tasks.reconcile_ledger() == 0
    assert Event.objects.count() == events


def test_the_beat_task_corrects_and_audits_a_drift(researcher, allocation, caplog):
    launch(researcher, allocation)
    truth = columns(allocation)
    Allocation.objects.filter(pk=allocation.pk).update(gpu_seconds_used=7, cost_reserved=0)

    assert allocation_tasks.reconcile_ledger() == 1

    assert ledger_stored(allocation_ids=[allocation.pk])[allocation.pk] == truth
    event = Event.objects.filter(object_id=allocation.pk, comment__startswith="Ledger corrected")
    assert event.count() == 1
    assert "gpu_seconds_used 7 -> 0" in event.get().comment
    assert f"allocation {allocation.pk}: Ledger corrected" in caplog.text


def test_saving_a_loaded_allocation_never_writes_stale_ledger_columns(researcher, allocation):
    stale = Allocation.objects.get(pk=allocation.pk)  # read before the launch
    launch(researcher, allocation)
    stale.status_reason = "edited by an admin"
    stale.save()
    assert columns(allocation).gpu_seconds_reserved > 0
