"""The job poll and the usage ingest cost the same per cycle with 10 live jobs as with 2,000 on
one facility: a bounded number of queries and of backend calls (launcher/services/monitor.py,
accounting.py; docs/performance.md, "A centre's scale")."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from allocations.models import Allocation, Facility, UsageRecord
from launcher import services
from launcher.backends.contract import BaseBackend, Capability, Fetched, Observation
from launcher.backends.registry import register, unregister
from launcher.models import Job
from tests.factories import AllocationFactory, FacilityFactory

BUDGET = 10


class Running(BaseBackend):
    """Every job runs on; counts what the poll asks of it."""

    name = "poll-scale"
    label = "Every job running (counting calls)"
    capabilities = frozenset({Capability.OBSERVE, Capability.FETCH})

    def __init__(self) -> None:
        self.observed = self.fetched = 0

    def observe(self, *, facility: Facility, jobs: Sequence[Job]) -> dict[int, Observation]:
        self.observed += 1
        return {job.pk: Observation(state="running", elapsed_seconds=60) for job in jobs}

    def fetch(self, *, facility: Facility, job: Job) -> Fetched:
        self.fetched += 1
        return Fetched(progress={"state": "running", "epoch": 2, "loss": 0.5}, log_tail="epoch 2")


@pytest.fixture
def backend(settings) -> Iterator[Running]:
    settings.PORTAL_POLL_FILES_PER_CYCLE = BUDGET
    entry = Running()
    register(entry)
    try:
        yield entry
    finally:
        unregister(entry.name)


def _running(allocation: Allocation, user, n: int) -> list[Job]:
    now = timezone.now()
    return Job.objects.bulk_create(
        [
            Job(
                allocation=allocation,
                created_by=user,
                state="running",
                token=f"scale-{allocation.pk}-{i}",
                scheduler_id=f"{1000 + i}",
                created_at=now,
                submitted_at=now,
                started_at=now,
            )
            for i in range(n)
        ]
    )


def _poll_cost(backend: Running, facility: Facility) -> tuple[int, int, int]:
    backend.observed = backend.fetched = 0
    with CaptureQueriesContext(connection) as queries:
        services.jobs_poll(facility_id=facility.pk)
    return len(queries), backend.observed, backend.fetched


@pytest.mark.django_db
def test_a_poll_of_2000_running_jobs_costs_what_a_poll_of_10_costs(backend, project, researcher):
    small = FacilityFactory(slug="small", backend=backend.name)
    large = FacilityFactory(slug="large", backend=backend.name)
    _running(AllocationFactory(project=project, facility=small), researcher, BUDGET)
    jobs = _running(AllocationFactory(project=project, facility=large), researcher, 2000)

    assert _poll_cost(backend, small) == _poll_cost(backend, large)
    queries, observed, fetched = _poll_cost(backend, large)
    assert (observed, fetched) == (1, BUDGET)

    # By turns: the next poll reads the next BUDGET jobs, not the same ones again.
    read = set(
        Job.objects.filter(pk__in=[j.pk for j in jobs], progress__epoch=2).values_list(
            "pk", flat=True
        )
    )
    assert len(read) == 2 * BUDGET  # two polls of the large facility so far


def _records(allocation: Allocation, jobs: list[Job]) -> list[UsageRecord]:
    end = timezone.now()
    return [
        UsageRecord(
            allocation=allocation,
            source="slurm",
            external_id=f"{job.scheduler_id}-{allocation.pk}",
            period_start=end - dt.timedelta(hours=1),
            period_end=end,
            gpu_seconds=3600,
            cost=Decimal("1.5"),
            job_id=job.pk,
        )
        for job in jobs
    ]


def test_an_ingest_of_2000_finished_jobs_costs_what_one_of_10_costs(postgres, project, researcher):
    """On PostgreSQL (SQLite splits a bulk insert into batches by its variable limit)."""
    costs = []
    for n in (10, 2000):
        allocation = AllocationFactory(project=project, gpu_hours=Decimal(100_000))
        jobs = _running(allocation, researcher, n)
        Job.objects.filter(pk__in=[j.pk for j in jobs]).update(state="succeeded")
        records = _records(allocation, jobs)
        with CaptureQueriesContext(connection) as queries:
            services.usage_ingest_records(allocation=allocation, records=records)
        costs.append(len(queries))
        allocation.refresh_from_db()
        assert allocation.gpu_seconds_used == 3600 * n
    assert costs[0] == costs[1]
