"""A new backend is one class and one registration: no migration, no choice to add, no name to
compare anywhere. A toy backend that keeps everything in memory is registered, a facility names
it (validated against the registry), and a job launched there through the portal's own services
is submitted, observed, fetched and charged like any other; unregistered, the name is refused
again."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence
from decimal import Decimal

import pytest
from django.contrib import admin as django_admin
from django.core.exceptions import ValidationError
from django.utils import timezone

from allocations.api.serializers import FacilitySerializer
from allocations.models import Allocation, Facility, UsageRecord
from launcher import services
from launcher.backends.contract import (
    BaseBackend,
    Capability,
    Fetched,
    Observation,
    Provisioned,
    Submission,
)
from launcher.backends.registry import backend_for, register, unregister
from launcher.models import Job
from launcher.provisioning import allocation_provision
from tests.factories import FacilityFactory

pytestmark = pytest.mark.django_db

QUICK = {"model": "resnet18", "epochs": 1, "size": 32, "synthetic_n": 96}


class ToyBackend(BaseBackend):
    """Every job runs at once and succeeds at the next observation, for 90 s per GPU."""

    name = "toy"
    label = "Toy (in memory)"
    capabilities = frozenset(
        {
            Capability.PROVISION,
            Capability.SUBMIT,
            Capability.OBSERVE,
            Capability.FETCH,
            Capability.CANCEL,
            Capability.USAGE,
        }
    )

    def __init__(self) -> None:
        self.running: dict[int, str] = {}  # Job.pk -> token
        self.done: dict[int, int] = {}  # Job.pk -> elapsed seconds
        self.cancelled: set[int] = set()

    def provision(self, *, allocation: Allocation) -> Provisioned:
        return Provisioned(account=f"toy-{allocation.pk}")

    def submit(self, *, facility: Facility, jobs: Sequence[Job], token: str) -> Submission:
        already = all(job.pk in self.running for job in jobs)
        for job in jobs:
            self.running[job.pk] = token
        return Submission(
            scheduler_id=f"toy-{token}",
            workdir=f"/toy/{token}",
            already_submitted=already,
            observed={job.pk: Observation(state="running") for job in jobs},
        )

    def observe(self, *, facility: Facility, jobs: Sequence[Job]) -> dict[int, Observation]:
        seen = {}
        for job in jobs:
            if job.pk in self.cancelled:
                seen[job.pk] = Observation(state="cancelled", reason="cancelled")
            elif job.pk in self.running:
                self.done[job.pk] = 90
                seen[job.pk] = Observation(state="succeeded", exit_code=0, elapsed_seconds=90)
        return seen

    def fetch(self, *, facility: Facility, job: Job) -> Fetched:
        return Fetched(
            progress={"state": "finished", "epoch": 1, "epochs": 1},
            log_tail="toy: done",
            metrics={"val_auc": 0.5} if job.pk in self.done else None,
        )

    def cancel(self, *, facility: Facility, jobs: Sequence[Job]) -> None:
        self.cancelled.update(job.pk for job in jobs)

    def usage(self, *, allocation: Allocation) -> list[UsageRecord]:
        end = timezone.now()
        jobs = Job.objects.filter(allocation=allocation, pk__in=list(self.done))
        return [
            UsageRecord(
                allocation_id=allocation.pk,
                source=self.name,
                external_id=f"toy/{job.pk}",
                period_start=end - dt.timedelta(seconds=self.done[job.pk]),
                period_end=end,
                gpu_seconds=self.done[job.pk] * job.gpus,
                cost=Decimal(0),
                job_id=job.pk,
            )
            for job in jobs
        ]


@pytest.fixture
def toy() -> Iterator[ToyBackend]:
    backend = ToyBackend()
    register(backend)
    try:
        yield backend
    finally:
        unregister(backend.name)


@pytest.fixture
def toy_allocation(toy, project) -> Allocation:
    facility = FacilityFactory(slug="toy-facility", kind="local", backend="toy")
    facility.full_clean()  # the registry's name passes the model's own validation
    today = timezone.localdate()
    allocation = Allocation.objects.create(
        project=project,
        facility=facility,
        gpu_hours=Decimal(10),
        start_date=today,
        end_date=today + dt.timedelta(days=30),
        status="provisioning",
    )
    allocation = allocation_provision(allocation_id=allocation.pk)
    assert allocation is not None and allocation.status == "active", allocation
    return allocation


def test_a_registered_backend_runs_a_job_charged_through_the_portals_services(
    toy, toy_allocation, researcher
):
    assert backend_for(toy_allocation.facility) is toy
    assert toy_allocation.account_name == f"toy-{toy_allocation.pk}"

    job = services.job_launch(
        by=researcher, allocation=toy_allocation, gpus=2, wall_time_minutes=10, params=dict(QUICK)
    )
    assert job.state == "queued"

    job = services.job_submit(job_id=job.pk)
    assert job is not None and job.state == "running" and job.scheduler_id == f"toy-{job.token}"

    services.jobs_poll(facility_id=toy_allocation.facility_id)
    job.refresh_from_db()
    assert job.state == "succeeded", job.state_reason

    assert services.usage_ingest(allocation=toy_allocation) == 1
    assert services.usage_ingest(allocation=toy_allocation) == 1  # offered again, stored once
    record = UsageRecord.objects.get(allocation=toy_allocation)
    assert (record.source, record.gpu_seconds, record.job_id) == ("toy", 180, job.pk)
    record.full_clean()  # the backend's ledger source is a valid choice too
    job.refresh_from_db()
    assert job.gpu_seconds == 180


def test_a_job_on_the_toy_backend_is_cancelled_through_the_services(
    toy, toy_allocation, researcher
):
    job = services.job_launch(
        by=researcher, allocation=toy_allocation, gpus=1, wall_time_minutes=10, params=dict(QUICK)
    )
    job = services.job_submit(job_id=job.pk)
    assert job is not None and job.state == "running"

    services.job_cancel(job=job, by=researcher)
    services.jobs_poll(facility_id=toy_allocation.facility_id)

    job.refresh_from_db()
    assert job.state == "cancelled" and job.pk in toy.cancelled


def test_the_facility_form_offers_the_registered_backends_and_refuses_others(toy):
    choices = dict(Facility._meta.get_field("backend").choices or ())
    assert choices["toy"] == "Toy (in memory)"
    assert {"local", "slurm", "aws", "manual"} <= set(choices)

    unregister("toy")
    facility = FacilityFactory.build(slug="gone", kind="local", backend="toy")
    with pytest.raises(ValidationError) as refused:
        facility.full_clean()
    assert "backend" in refused.value.message_dict


def test_the_admins_facility_form_offers_the_toy_and_refuses_an_unknown_name(toy, admin, rf):
    request = rf.get("/admin/allocations/facility/add/")
    request.user = admin
    form_class = django_admin.site._registry[Facility].get_form(request)
    assert ("toy", "Toy (in memory)") in list(form_class.base_fields["backend"].choices)

    form = form_class(data={"backend": "nope"})
    assert not form.is_valid()
    assert "backend" in form.errors and "nope" in form.errors["backend"][0]


def test_the_apis_facility_field_names_the_registered_backends(toy):
    assert "toy" in FacilitySerializer().fields["backend"].choices
