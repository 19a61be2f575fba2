"""Usage external ids do not depend on names that can change: renaming a facility's slug
charges nothing again (ids carry the facility's pk and the scheduler's job id or the job's
token), and the migration rewrites the records written under the old, slug-based ids."""

from __future__ import annotations

import datetime as dt
import importlib
from decimal import Decimal

import pytest
from django.apps import apps
from django.utils import timezone

from allocations.models import Allocation, UsageRecord
from launcher.services.accounting import usage_ingest_records
from launcher.slurm.records import UsageRow
from launcher.slurm.usage import usage_records
from tests.factories import FacilityFactory

pytestmark = pytest.mark.django_db
MIGRATION = importlib.import_module(
    "launcher.migrations.0005_job_submit_lease_and_stable_usage_ids"
)


@pytest.fixture
def allocation(project):
    facility = FacilityFactory(slug="cluster-a", backend="slurm", gpu_hour_rate=Decimal("1.00"))
    today = timezone.localdate()
    return Allocation.objects.create(
        project=project,
        facility=facility,
        gpu_hours=Decimal(10),
        start_date=today,
        end_date=today + dt.timedelta(days=30),
        status="active",
        account_name="ids-a1",
    )


def usage_ingest_rows(*, allocation, rows):
    """What the Slurm backend's usage() and the one accounting service do with sacct rows."""
    return usage_ingest_records(
        allocation=allocation, records=usage_records(allocation=allocation, rows=rows)
    )


def rows() -> list[UsageRow]:
    end = dt.datetime(2026, 11, 1, 12, 0, tzinfo=dt.UTC)
    return [
        UsageRow(
            job_id=str(n),
            step="",
            account="ids-a1",
            state="COMPLETED",
            elapsed_seconds=600,
            gpus=1,
            start=end - dt.timedelta(minutes=10),
            end=end,
        )
        for n in (41, 42)
    ]


def test_renaming_the_facility_slug_charges_nothing_again(allocation):
    usage_ingest_rows(allocation=allocation, rows=rows())
    allocation.facility.slug = "cluster-renamed"
    allocation.facility.save(update_fields=["slug"])
    allocation.refresh_from_db()

    usage_ingest_rows(allocation=allocation, rows=rows())

    assert UsageRecord.objects.filter(allocation=allocation).count() == 2
    assert sorted(UsageRecord.objects.values_list("external_id", flat=True)) == [
        f"{allocation.facility_id}/41",
        f"{allocation.facility_id}/42",
    ]


def test_the_migration_rewrites_slug_ids_to_stable_ones_and_back(allocation):
    now = timezone.now()
    for source, old in (
        ("slurm", "cluster-a:41"),
        ("local", "cluster-a:portal-job-1:0"),
        ("cloud", "i-1:20260101T000000"),
    ):
        UsageRecord.objects.create(
            allocation=allocation, source=source, external_id=old, period_start=now, period_end=now
        )
    pk = allocation.facility_id

    MIGRATION.forwards(apps, None)
    assert sorted(UsageRecord.objects.values_list("external_id", flat=True)) == sorted(
        [f"{pk}/41", f"{pk}/portal-job-1:0", "i-1:20260101T000000"]
    )
    usage_ingest_rows(allocation=allocation, rows=rows()[:1])  # job 41 again: no new charge
    assert UsageRecord.objects.filter(source="slurm").count() == 1

    MIGRATION.backwards(apps, None)
    assert sorted(UsageRecord.objects.values_list("external_id", flat=True)) == sorted(
        ["cluster-a:41", "cluster-a:portal-job-1:0", "i-1:20260101T000000"]
    )
