"""factory-boy factories for the domain. Defaults make a valid full request."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import factory
from django.contrib.auth import get_user_model
from django.utils import timezone

from allocations.models import (
    Allocation,
    AllocationRequest,
    Facility,
    NodeType,
    Project,
    ProjectMembership,
    UsageRecord,
)
from allocations.services import ledger_reserve, usage_record_many
from launcher.models import Job

JUSTIFICATION = (
    "We train DenseNet and ResNet classifiers on chest CT and X-ray images to detect COVID-19, "
    "sweeping learning rates and folds, which needs A100 GPUs for two months of experiments."
)


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.org")
    password = factory.PostGenerationMethodCall("set_password", "pw-for-tests")

    @classmethod
    def _after_postgeneration(cls, instance, create, results=None):
        if create:
            instance.save()


class FacilityFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Facility
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"facility-{n}")
    name = factory.LazyAttribute(lambda f: f.slug.replace("-", " ").title())
    kind = "hpc"
    backend = "local"
    trial_gpu_hours_cap = 400
    trial_days = 90
    trial_auto_approve = True
    latest_end_date = factory.LazyFunction(lambda: timezone.localdate() + dt.timedelta(days=365))
    allowed_sensitivity = ["public", "internal"]
    gpu_hour_rate = Decimal("1.00")


class NodeTypeFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = NodeType

    facility = factory.SubFactory(FacilityFactory)
    name = factory.Sequence(lambda n: f"N-A100-{n}")
    accelerator = "NVIDIA A100"
    accelerator_memory_gb = 40


class ProjectFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Project
        skip_postgeneration_save = True

    code = factory.Sequence(lambda n: f"PRJ-{n:04d}")
    title = "Chest imaging"
    research_area = "Health"
    pi = factory.SubFactory(UserFactory)
    pi_name = "Paula Investigator"
    pi_email = "pi@example.org"

    @factory.post_generation
    def with_pi_membership(self, create, extracted, **kwargs):
        if create:
            ProjectMembership.objects.get_or_create(
                project=self, user=self.pi, defaults={"role": "pi"}
            )


class RequestFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = AllocationRequest

    project = factory.SubFactory(ProjectFactory)
    facility = factory.SubFactory(FacilityFactory)
    kind = "full"
    purpose = "new"
    gpu_hours = 1000
    cpu_hours = 0
    start_date = factory.LazyFunction(timezone.localdate)
    end_date = factory.LazyFunction(lambda: timezone.localdate() + dt.timedelta(days=60))
    data_sensitivity = "public"
    justification = JUSTIFICATION
    requested_by = factory.LazyAttribute(lambda r: r.project.pi)


class AllocationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Allocation

    project = factory.SubFactory(ProjectFactory)
    facility = factory.SubFactory(FacilityFactory)
    kind = "full"
    gpu_hours = Decimal("100")
    start_date = factory.LazyFunction(timezone.localdate)
    end_date = factory.LazyFunction(lambda: timezone.localdate() + dt.timedelta(days=60))
    status = "active"


def charge(**fields) -> UsageRecord:
    """A usage record charged as the backends charge (`usage_record_many`: the ledger columns
    move with it), returned as saved."""
    fields.setdefault("period_start", timezone.now())
    fields.setdefault("period_end", fields["period_start"])
    record = UsageRecord(**fields)
    usage_record_many([record])
    return UsageRecord.objects.get(source=record.source, external_id=record.external_id)


def open_job(**fields):
    """A launcher Job written directly (as a backend would have moved it), its reservation
    added to the allocation's ledger columns as `job_launch` adds it."""
    job = Job.objects.create(**fields)
    ledger_reserve(allocation_id=job.allocation_id, job_ids=[job.pk])
    return job
