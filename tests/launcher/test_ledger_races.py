"""The ledger cannot be overspent: launches racing for the last hours of an allocation are
checked one after the other under the allocation's row lock, against granted less charged
less the reservations of unfinished work. Real PostgreSQL, real threads, a barrier so they
race; the queue that would submit the accepted jobs is replaced by a list (submission is
tested in test_jobs_slurm.py and the cloud tests)."""

from __future__ import annotations

import threading
from decimal import Decimal

import pytest
from django.db import connection

from allocations.selectors import allocation_ledger
from benchmarks import catalogue
from benchmarks.demo import _workload
from benchmarks.models import BenchmarkResult, Workload
from launcher import services, tasks
from launcher.models import Job
from launcher.services import LaunchConflict
from tests.factories import AllocationFactory, FacilityFactory, NodeTypeFactory, charge, open_job

pytestmark = pytest.mark.django_db(transaction=True)

PARAMS = {"model": "resnet18", "epochs": 1}


@pytest.fixture
def queued(monkeypatch):
    """The ids the launches enqueued for submission (after their commit)."""
    ids: list[int] = []
    monkeypatch.setattr(tasks.submit_job, "delay", ids.append)
    monkeypatch.setattr(tasks.submit_sweep, "delay", ids.append)
    return ids


def race(n: int, launch) -> tuple[list[Job], list[LaunchConflict]]:
    """Run `launch()` in n threads released together; collect what each got."""
    barrier = threading.Barrier(n)
    accepted: list[Job] = []
    refused: list[LaunchConflict] = []
    errors: list[BaseException] = []

    def one() -> None:
        try:
            barrier.wait()
            accepted.append(launch())
        except LaunchConflict as conflict:
            refused.append(conflict)
        except BaseException as exc:  # surfaced below: a race must fail the test, not a thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    return accepted, refused


def test_concurrent_launches_accept_exactly_what_the_grant_holds(
    postgres, project, researcher, queued
):
    # Room for exactly 3 one-hour jobs (1 GPU x 60 min, the wall-time estimate) after 1 GPU-hour
    # already charged and 1 reserved by a job still running.
    facility = FacilityFactory(slug="local-site", backend="local")
    allocation = AllocationFactory(project=project, facility=facility, gpu_hours=Decimal("5"))
    charge(
        allocation=allocation,
        source="local",
        external_id="old-run",
        period_start="2026-01-01T00:00Z",
        period_end="2026-01-01T01:00Z",
        gpu_seconds=3600,
    )
    open_job(
        allocation=allocation,
        created_by=researcher,
        gpus=1,
        wall_time_minutes=60,
        estimate_gpu_hours=Decimal("1"),
        token="running-1",
        state=Job.State.RUNNING,
    )

    accepted, refused = race(
        8,
        lambda: services.job_launch(
            by=researcher, allocation=allocation, gpus=1, wall_time_minutes=60, params=PARAMS
        ),
    )

    assert len(accepted) == 3 and len(refused) == 5
    assert sorted(queued) == sorted(job.pk for job in accepted)
    assert all(c.data["remaining_gpu_hours"] == 0 for c in refused[-1:])
    ledger = allocation_ledger(allocation.pk)
    assert ledger.gpu_seconds_used == 3600 and ledger.gpu_seconds_reserved == 4 * 3600
    assert ledger.gpu_seconds_remaining == 0


def test_concurrent_sweeps_never_pass_the_grant_together(postgres, project, researcher, queued):
    facility = FacilityFactory(slug="local-site", backend="local")
    allocation = AllocationFactory(project=project, facility=facility, gpu_hours=Decimal("5"))
    grid = {
        "models": ["resnet18"],
        "lrs": [0.001, 0.0001],
        "lr_steps": [10],
        "weight_decays": [0.0001],
        "folds": 1,
    }

    accepted, refused = race(
        5,
        lambda: services.sweep_launch(
            by=researcher,
            allocation=allocation,
            grid=grid,
            gpus=1,
            wall_time_minutes=60,
            params=PARAMS,
        ),
    )

    assert len(accepted) == 2 and len(refused) == 3  # 2 cells x 1 GPU-hour each, 5 granted
    assert allocation_ledger(allocation.pk).gpu_seconds_reserved == 4 * 3600


def test_a_finished_job_releases_its_reservation_and_its_charge_takes_its_place(
    project, researcher, queued
):
    facility = FacilityFactory(slug="local-site", backend="local")
    allocation = AllocationFactory(project=project, facility=facility, gpu_hours=Decimal("2"))
    job = services.job_launch(
        by=researcher, allocation=allocation, gpus=2, wall_time_minutes=30, params=PARAMS
    )
    assert allocation_ledger(allocation.pk).gpu_seconds_reserved == 3600

    # Charged for part of its run while it still runs: the reservation keeps only the rest.
    charge(
        allocation=allocation,
        source="local",
        external_id="part",
        period_start="2026-01-01T00:00Z",
        period_end="2026-01-01T00:10Z",
        gpu_seconds=1200,
        job_id=job.pk,
    )
    ledger = allocation_ledger(allocation.pk)
    assert (ledger.gpu_seconds_used, ledger.gpu_seconds_reserved) == (1200, 2400)

    # Over its estimate: it reserves nothing more (never a negative reservation).
    charge(
        allocation=allocation,
        source="local",
        external_id="rest",
        period_start="2026-01-01T00:10Z",
        period_end="2026-01-01T00:40Z",
        gpu_seconds=3000,
        job_id=job.pk,
    )
    assert allocation_ledger(allocation.pk).gpu_seconds_reserved == 0

    Job.objects.filter(pk=job.pk).update(state=Job.State.SUCCEEDED)
    ledger = allocation_ledger(allocation.pk)
    assert (ledger.gpu_seconds_used, ledger.gpu_seconds_reserved) == (4200, 0)
    assert ledger.gpu_seconds_remaining == 7200 - 4200


def test_a_job_shows_its_estimate_reservation_and_charge_side_by_side(project, researcher, queued):
    from launcher.selectors import with_reservation

    facility = FacilityFactory(slug="local-site", backend="local")
    allocation = AllocationFactory(project=project, facility=facility, gpu_hours=Decimal("2"))
    job = services.job_launch(
        by=researcher, allocation=allocation, gpus=1, wall_time_minutes=60, params=PARAMS
    )
    charge(
        allocation=allocation,
        source="cloud",
        external_id="i-1:0",
        period_start="2026-01-01T00:00Z",
        period_end="2026-01-01T00:15Z",
        gpu_seconds=900,
        cost=Decimal("0.25"),
        job_id=job.pk,
    )
    row = with_reservation(Job.objects.filter(pk=job.pk)).get()
    assert (row.estimate_gpu_hours, row.charged_seconds, row.reserved_seconds) == (1, 900, 2700)
    assert row.reserved_cost == max(job.estimate_cost - Decimal("0.25"), 0)
    Job.objects.filter(pk=job.pk).update(state=Job.State.FAILED)
    row = with_reservation(Job.objects.filter(pk=job.pk)).get()
    assert (row.charged_seconds, row.reserved_seconds, row.reserved_cost) == (900, 0, 0)


def test_the_job_page_shows_what_is_still_reserved_and_what_was_charged(
    client, project, researcher, queued
):
    facility = FacilityFactory(slug="local-site", backend="local")
    allocation = AllocationFactory(project=project, facility=facility, gpu_hours=Decimal("2"))
    job = services.job_launch(
        by=researcher, allocation=allocation, gpus=1, wall_time_minutes=60, params=PARAMS
    )
    charge(
        allocation=allocation,
        source="cloud",
        external_id="i-2:0",
        period_start="2026-01-01T00:00Z",
        period_end="2026-01-01T00:09Z",
        gpu_seconds=540,
        cost=Decimal("0.05"),
        job_id=job.pk,
    )
    client.force_login(researcher)
    html = client.get(f"/jobs/{job.pk}/").content.decode()
    assert 'id="numbers-reservation"' in html
    assert 'title="0.85 (exact)">0.85</span> GPU-hours' in html  # 1 h estimate less 540 s
    assert "540 GPU-seconds" in html
    assert "60 min: the limit, the run is stopped there" in html
    assert "1.00</span> GPU-hours (wall time x GPUs; prediction: wall-time)" in html


def test_a_short_prediction_does_not_shrink_what_racing_launches_reserve(
    postgres, project, researcher, queued
):
    """The recommender predicts ~34 s for this job, but each launch reserves its limit (60 min
    x 1 GPU): against 5 GPU-hours exactly 5 of 8 racing launches pass (the prediction would
    have let all 8 in, 8 x 0.010 GPU-hours, and the backends stop a run only at its wall time)."""
    for w in catalogue.WORKLOADS:
        _workload(w)
    facility = FacilityFactory(slug="local-site", backend="local")
    node = NodeTypeFactory(
        facility=facility,
        name="N-MEAS",
        accelerator="Chip M",
        peak_tflops_fp16=100.0,
        peak_tflops_bf16=100.0,
        peak_tflops_fp32=10.0,
    )
    BenchmarkResult.objects.create(
        node_type=node,
        workload=Workload.objects.get(key="densenet121-2d"),
        precision="bf16",
        gpus=1,
        batch_size=8,
        image_size=64,
        throughput=20.0,
        source="measured",
    )
    allocation = AllocationFactory(
        project=project, facility=facility, node_type=node, gpu_hours=Decimal("5")
    )
    params = {
        "model": "densenet121",
        "epochs": 2,
        "dataset": "synthetic-ct",
        "synthetic_n": 40,
        "size": 64,
        "batch_size": 8,
    }

    accepted, refused = race(
        8,
        lambda: services.job_launch(
            by=researcher, allocation=allocation, gpus=1, wall_time_minutes=60, params=params
        ),
    )

    assert len(accepted) == 5 and len(refused) == 3
    assert all(job.estimate_source == "measured" for job in accepted)
    assert all(job.predicted_hours < Decimal("0.01") for job in accepted)
    assert all(job.estimate_gpu_hours == Decimal("1.000") for job in accepted)
    ledger = allocation_ledger(allocation.pk)
    assert ledger.gpu_seconds_reserved == 5 * 3600 and ledger.gpu_seconds_remaining == 0
    assert {c.data["estimate_gpu_hours"] for c in refused} == {1.0}
