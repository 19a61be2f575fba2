"""The ledger's monthly rollups: kept by its writes, checked and corrected by its reconcile
(incrementally each hour, fully each day), and what year-long reports read instead of records."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from allocations.models import Event, LedgerPass, UsageMonth
from allocations.reconcile import ledger_reconcile
from allocations.rollups import month_of, rollup_recomputed
from portal.reports.selectors import usage_report
from tests.factories import AllocationFactory, FacilityFactory, charge

pytestmark = pytest.mark.django_db
JAN = dt.datetime(2026, 1, 31, 23, 30, tzinfo=dt.UTC)
FEB = dt.datetime(2026, 2, 1, 0, 10, tzinfo=dt.UTC)
MAR = dt.datetime(2026, 3, 15, 9, tzinfo=dt.UTC)


def _charge(allocation, name, when, seconds, cost="0", job_id=None):
    return charge(
        allocation=allocation,
        source="local",
        external_id=name,
        period_start=when,
        gpu_seconds=seconds,
        cost=Decimal(cost),
        job_id=job_id,
    )


@pytest.fixture
def charged(project, other_project):
    hpc = FacilityFactory(slug="hpc", name="HPC")
    mine = AllocationFactory(project=project, facility=hpc)
    theirs = AllocationFactory(project=other_project, facility=hpc)
    _charge(mine, "job-1", JAN, 3600, "2.5000", job_id=1)
    _charge(mine, "notebook/4/1/nb", FEB, 1800, "1.0000")
    _charge(mine, "head-node", FEB, 600, "0.2500")
    _charge(mine, "job-2", MAR, 7200, "5.0000", job_id=2)
    _charge(theirs, "job-3", FEB, 900, "0.7500", job_id=3)
    return mine, theirs


def test_each_charge_lands_in_its_month_with_its_split(charged):
    mine, theirs = charged
    months = {m.month: m for m in UsageMonth.objects.filter(allocation=mine)}
    assert sorted(months) == [dt.date(2026, 1, 1), dt.date(2026, 2, 1), dt.date(2026, 3, 1)]
    feb = months[dt.date(2026, 2, 1)]
    assert (feb.records, feb.gpu_seconds, feb.cost) == (2, 2400, Decimal("1.2500"))
    assert (feb.job_gpu_seconds, feb.notebook_gpu_seconds) == (0, 1800)
    assert months[dt.date(2026, 1, 1)].job_gpu_seconds == 3600
    # Kept equal to the records' own sums, month by month, for every allocation.
    stored = {
        (m.allocation_id, m.month): (
            m.records,
            m.gpu_seconds,
            m.cost,
            m.job_gpu_seconds,
            m.notebook_gpu_seconds,
        )
        for m in UsageMonth.objects.all()
    }
    assert stored == rollup_recomputed()


def test_a_record_charged_twice_counts_once_in_its_month(charged):
    mine, _ = charged
    _charge(mine, "job-2", MAR, 7200, "5.0000", job_id=2)  # the backend reports it again
    assert UsageMonth.objects.get(allocation=mine, month=dt.date(2026, 3, 1)).gpu_seconds == 7200


def test_the_reconcile_rebuilds_a_drifted_month_and_audits_it(charged, caplog):
    mine, _ = charged
    UsageMonth.objects.filter(allocation=mine, month=dt.date(2026, 2, 1)).update(gpu_seconds=1)

    drifts = ledger_reconcile()

    assert [d.allocation_id for d in drifts] == [mine.pk]
    assert UsageMonth.objects.get(allocation=mine, month=dt.date(2026, 2, 1)).gpu_seconds == 2400
    event = Event.objects.get(object_id=mine.pk, comment__startswith="Ledger corrected")
    assert "monthly rollups rebuilt" in event.comment
    assert ledger_reconcile(full=True) == []


def test_the_hourly_pass_checks_only_what_changed_and_the_daily_pass_everything(charged):
    mine, theirs = charged
    first = ledger_reconcile()
    assert LedgerPass.objects.get().full  # the first pass ever checks every allocation
    assert first == []

    # Nothing changed: the next pass checks nothing, and misses a drift planted behind the
    # ledger's back in an allocation nobody charged since.
    UsageMonth.objects.filter(allocation=theirs).update(gpu_seconds=5)
    assert ledger_reconcile() == []
    second = LedgerPass.objects.order_by("-pk").first()
    assert (second.full, second.allocations_checked) == (False, 0)

    # A new charge to `mine`: the hourly pass checks `mine` only.
    _charge(mine, "job-4", MAR, 60, job_id=4)
    assert ledger_reconcile() == []
    third = LedgerPass.objects.order_by("-pk").first()
    assert (third.full, third.allocations_checked) == (False, 1)

    # A day after the last full pass, the pass is full and finds the planted drift.
    LedgerPass.objects.filter(full=True).update(ran_at=timezone.now() - dt.timedelta(hours=25))
    LedgerPass.objects.filter(full=False).delete()
    drifts = ledger_reconcile()
    assert [d.allocation_id for d in drifts] == [theirs.pk]
    assert LedgerPass.objects.order_by("-pk").first().full


def test_a_report_from_a_month_start_reads_the_rollups_not_the_records(charged, admin):
    with CaptureQueriesContext(connection) as queries:
        report = usage_report(admin, group_by="project", since=dt.date(2026, 2, 1))
    usage_queries = [q["sql"] for q in queries if "allocations_usagerecord" in q["sql"]]
    assert usage_queries == []
    totals = {(r["group"], r["period"]): r["gpu_seconds"] for r in report.rows}
    mine, theirs = charged
    assert totals[(mine.project.code, dt.date(2026, 2, 1))] == 2400
    assert totals[(mine.project.code, dt.date(2026, 3, 1))] == 7200
    assert totals[(theirs.project.code, dt.date(2026, 2, 1))] == 900
    assert report.split == {"jobs": (7200 + 900) / 3600, "notebooks": 0.5, "other": 600 / 3600}


def test_a_report_from_inside_a_month_counts_only_the_days_from_its_start(charged, admin):
    mine, _ = charged
    _charge(mine, "job-early-march", dt.datetime(2026, 3, 2, tzinfo=dt.UTC), 100, job_id=5)

    report = usage_report(admin, group_by="facility", since=dt.date(2026, 3, 10))

    # March from the 10th: job-2 (7,200 s on the 15th), not the 100 s of the 2nd.
    assert [(r["group"], r["period"], r["gpu_seconds"]) for r in report.rows] == [
        ("HPC", dt.date(2026, 3, 1), 7200)
    ]
    assert report.split["jobs"] == 2.0


def test_months_follow_the_portal_time_zone():
    assert month_of(JAN) == dt.date(2026, 1, 1)
    assert month_of(FEB) == dt.date(2026, 2, 1)
