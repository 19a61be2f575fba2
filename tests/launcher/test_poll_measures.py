"""Every succeeded run is a measurement, however its files and its end fall between polls
(issue 39, found on a fresh `make run`: the first job's throughput was not stored). The trainer
writes metrics.json before it exits, so a poll can read the metrics while the job still runs
and the next poll sees it succeed with nothing left to read; the run is recorded then."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest
from django.utils import timezone

from allocations.models import Facility
from benchmarks import catalogue
from benchmarks.demo import _workload
from benchmarks.models import BenchmarkResult
from launcher import services
from launcher.backends.contract import BaseBackend, Capability, Fetched, Observation
from launcher.backends.registry import register, unregister
from launcher.models import Job
from tests.factories import AllocationFactory, FacilityFactory, NodeTypeFactory

pytestmark = pytest.mark.django_db
METRICS = {
    "model": "resnet18",
    "config": {"model": "resnet18", "size": 32, "batch_size": 4, "dims": 2},
    "measured": {
        "train_images_per_s": 42.0,
        "train_seconds": 30.0,
        "precision": "fp32",
        "gpus": 1,
        "batch_size": 4,
        "image_size": 32,
        "peak_memory_gb": 0.5,
    },
}


class Ending(BaseBackend):
    """A run that is running at the first poll (its metrics.json already written) and has
    succeeded at the second."""

    name = "poll-measures"
    label = "A run ending between two polls"
    capabilities = frozenset({Capability.OBSERVE, Capability.FETCH})
    state = "running"

    def observe(self, *, facility: Facility, jobs: Sequence[Job]) -> dict[int, Observation]:
        return {job.pk: Observation(state=self.state, elapsed_seconds=60) for job in jobs}

    def fetch(self, *, facility: Facility, job: Job) -> Fetched:
        return Fetched(progress={"epoch": 2, "loss": 0.4}, log_tail="done", metrics=METRICS)


@pytest.fixture
def backend() -> Iterator[Ending]:
    entry = Ending()
    register(entry)
    try:
        yield entry
    finally:
        unregister(entry.name)


def test_a_run_whose_metrics_were_read_while_it_ran_is_measured_when_it_succeeds(
    backend, project, researcher
):
    for workload in catalogue.WORKLOADS:
        _workload(workload)
    facility = FacilityFactory(slug="poll-measures", backend=backend.name)
    node = NodeTypeFactory(facility=facility, name="chip-p")
    allocation = AllocationFactory(project=project, facility=facility, node_type=node)
    now = timezone.now()
    job = Job.objects.create(
        allocation=allocation,
        created_by=researcher,
        state="running",
        token="poll-measures-1",
        scheduler_id="77",
        params={"model": "resnet18", "size": 32, "batch_size": 4, "epochs": 2},
        gpus=1,
        submitted_at=now,
        started_at=now,
    )

    services.jobs_poll(facility_id=facility.pk)  # running: its metrics are read
    job.refresh_from_db()
    assert job.metrics == METRICS and not BenchmarkResult.objects.exists()

    backend.state = "succeeded"
    services.jobs_poll(facility_id=facility.pk)  # succeeded: nothing left to read

    job.refresh_from_db()
    assert job.state == "succeeded" and job.benchmark_result is not None
    assert job.benchmark_result.throughput == 42.0 and job.benchmark_result.source == "job"
    services.jobs_poll(facility_id=facility.pk)  # polled again: still one
    assert BenchmarkResult.objects.filter(source="job").count() == 1
