"""The cloud side of the ledger: concurrent launches never pass the money budget together, a
running job's instance time replaces its reservation instead of being counted beside it, and
instance time is charged after the allocation is closed."""

from __future__ import annotations

import threading
from decimal import ROUND_DOWN, Decimal

import pytest
from django.db import connection

from allocations.ledger import ledger_recomputed, ledger_stored
from allocations.models import UsageRecord
from allocations.selectors import allocation_ledger
from allocations.services import allocation_close
from launcher import services, tasks
from launcher.cloud import clock
from launcher.cloud.models import CloudTask, Cluster, Node
from launcher.cloud.selectors import price_for
from launcher.cloud.services import cluster_stop_workers, cluster_sync
from launcher.cloud.tasks import sync_all
from launcher.services import LaunchConflict
from tests.factories import AllocationFactory

pytestmark = pytest.mark.django_db(transaction=True)

PARAMS = {"model": "resnet18", "epochs": 1, "dataset": "synthetic-ct", "synthetic_n": 24}


def test_concurrent_launches_never_pass_the_money_budget_together(
    project, researcher, cloud_facility, monkeypatch
):
    monkeypatch.setattr(tasks.submit_job, "delay", lambda job_id: None)
    price = price_for(facility=cloud_facility, instance_type="g5.xlarge", market="spot")
    one_hour = price.quantize(Decimal("0.0001"))
    # GPU-hours to spare; money for two one-hour jobs, not three (budgets have cents).
    budget = (2 * one_hour + Decimal("0.01")).quantize(Decimal("0.01"), rounding=ROUND_DOWN)
    assert 2 * one_hour <= budget < 3 * one_hour
    allocation = AllocationFactory(
        project=project, facility=cloud_facility, gpu_hours=Decimal("1000"), budget=budget
    )
    barrier = threading.Barrier(6)
    accepted, refused, errors = [], [], []

    def launch() -> None:
        try:
            barrier.wait()
            accepted.append(
                services.job_launch(
                    by=researcher,
                    allocation=allocation,
                    gpus=1,
                    wall_time_minutes=60,
                    params=PARAMS,
                )
            )
        except LaunchConflict as conflict:
            refused.append(conflict)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=launch) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)

    assert not errors, errors
    assert len(accepted) == 2 and len(refused) == 4, [c.message for c in refused]
    assert all(job.estimate_cost == one_hour for job in accepted)
    assert {c.data["remaining_budget"] for c in refused} == {f"{budget - 2 * one_hour:.4f}"}
    ledger = allocation_ledger(allocation.pk)
    assert ledger.cost_reserved == 2 * one_hour
    assert ledger.budget_remaining == budget - 2 * one_hour


def test_a_running_cloud_jobs_charges_replace_its_reservation(researcher, allocation, cluster):
    job = services.job_launch(
        by=researcher, allocation=allocation, gpus=1, wall_time_minutes=60, params=PARAMS
    )  # submitted on commit
    task = CloudTask.objects.get(job_id=job.pk)
    cluster_sync(cluster_id=cluster.pk)  # the worker is running (moto: at once)
    worker = Node.objects.get(pk=task.node_id)
    assert worker.running_at is not None

    clock.advance(20 * 60)  # twenty billed minutes on the worker
    cluster_sync(cluster_id=cluster.pk)

    job.refresh_from_db()
    assert job.state not in job.FINAL
    worker_charges = UsageRecord.objects.filter(allocation=allocation, detail__node=worker.pk)
    charged_seconds = sum(r.gpu_seconds for r in worker_charges)
    charged_cost = sum(r.cost for r in worker_charges)
    assert charged_seconds >= 19 * 60 and set(worker_charges.values_list("job_id", flat=True)) == {
        job.pk
    }
    ledger = allocation_ledger(allocation.pk)
    # Reserved: only what the estimate has not been charged yet. The worker is all that was
    # charged (no head node): spend and reservation add up to the job's estimate exactly.
    assert ledger.gpu_seconds_reserved == job.estimate_gpu_hours * 3600 - charged_seconds
    assert ledger.cost_reserved == job.estimate_cost - charged_cost
    assert ledger.spend == charged_cost
    assert ledger.budget_remaining == allocation.budget - job.estimate_cost


def test_instance_time_is_charged_after_the_allocation_is_closed(researcher, allocation, cluster):
    job = services.job_launch(
        by=researcher, allocation=allocation, gpus=1, wall_time_minutes=60, params=PARAMS
    )
    cluster_sync(cluster_id=cluster.pk)
    worker = Node.objects.get(pk=CloudTask.objects.get(job_id=job.pk).node_id)
    clock.advance(10 * 60)  # the worker runs ten minutes, not charged yet
    allocation_close(allocation=allocation, comment="Project ended.")  # workers terminated
    worker.refresh_from_db()
    assert (
        worker.ended_at is not None
        and not UsageRecord.objects.filter(detail__node=worker.pk).exists()
    )
    # The cluster's idle stop has stopped it meanwhile: it is no longer live.
    Cluster.objects.filter(pk=cluster.pk).update(state=Cluster.State.STOPPED)

    sync_all()  # the beat: a cluster that still owes charges is synced whatever its state

    charged = UsageRecord.objects.filter(allocation=allocation, detail__node=worker.pk)
    assert sum(r.gpu_seconds for r in charged) >= 9 * 60
    assert set(charged.values_list("job_id", flat=True)) == {job.pk}


def test_charges_split_at_hour_marks_add_up_to_the_whole_running_time(
    researcher, allocation, cluster
):
    import datetime as dt

    from launcher.cloud.services.costs import node_charge

    job = services.job_launch(
        by=researcher, allocation=allocation, gpus=1, wall_time_minutes=60, params=PARAMS
    )
    cluster_sync(cluster_id=cluster.pk)
    worker = Node.objects.get(pk=CloudTask.objects.get(job_id=job.pk).node_id)
    started = dt.datetime(2026, 11, 23, 9, 59, 50, 600000, tzinfo=dt.UTC)
    ended = started + dt.timedelta(seconds=600)  # 10:09:50.6, across the 10:00 mark
    Node.objects.filter(pk=worker.pk).update(running_at=started, ended_at=ended, charged_until=None)
    UsageRecord.objects.filter(detail__node=worker.pk).delete()

    assert node_charge(node_id=worker.pk) == 2  # one record an hour
    charged = UsageRecord.objects.filter(detail__node=worker.pk)
    assert sorted(r.gpu_seconds for r in charged) == [10, 590]  # 9.4 s floored alone would be 9
    assert sum(r.gpu_seconds for r in charged) == 600


def test_a_cloud_stop_keeps_the_ledger_columns_equal_to_the_recomputation(
    researcher, allocation, cluster
):
    def stored_is_recomputed():
        stored = ledger_stored(allocation_ids=[allocation.pk])[allocation.pk]
        assert stored == ledger_recomputed(allocation_ids=[allocation.pk])[allocation.pk]
        return stored

    job = services.job_launch(
        by=researcher, allocation=allocation, gpus=1, wall_time_minutes=60, params=PARAMS
    )
    cluster_sync(cluster_id=cluster.pk)
    clock.advance(15 * 60)
    cluster_sync(cluster_id=cluster.pk)  # charges while running
    running = stored_is_recomputed()
    assert running.gpu_seconds_used > 0 and running.gpu_seconds_reserved > 0

    cluster_stop_workers(cluster_id=cluster.pk, reason="budget spent")  # the cloud stop
    clock.advance(60)
    cluster_sync(cluster_id=cluster.pk)  # the worker's last minutes charged
    tasks.poll_jobs()  # the monitor sees the cancelled task: the job ends
    job.refresh_from_db()
    assert job.state in job.FINAL
    stopped = stored_is_recomputed()
    assert stopped.gpu_seconds_reserved == 0 and stopped.cost_reserved == 0
    assert stopped.spend == sum(r.cost for r in UsageRecord.objects.filter(allocation=allocation))
