"""The usage report's job figures from the hourly rollups of settled months equal the same
figures counted job by job (launcher/job_months.py, portal/reports/job_rollups.py)."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from launcher.job_months import job_months_rebuild, settled_months
from launcher.models import Job, JobMonth, JobMonthSize
from portal.reports.selectors import usage_report
from tests.factories import AllocationFactory, FacilityFactory

pytestmark = pytest.mark.django_db
UTC = dt.UTC
NOW = dt.datetime(2026, 4, 10, 12, tzinfo=UTC)


def _job(allocation, user, created, *, wait=30, run=600, state="succeeded", gpus=1, util=None):
    started = created + dt.timedelta(seconds=wait) if wait is not None else None
    finished = started + dt.timedelta(seconds=run) if started and run is not None else None
    return Job.objects.create(
        allocation=allocation,
        created_by=user,
        gpus=gpus,
        state=state,
        token=f"r{Job.objects.count()}",
        created_at=created,
        submitted_at=created,
        started_at=started,
        finished_at=finished if state != "running" else None,
        gpu_seconds=(run or 0) * gpus if started else 0,
        utilisation_mean=util,
        utilisation_source="gpu" if util is not None else "",
    )


@pytest.fixture
def jobs(project, other_project, researcher, outsider):
    hpc = FacilityFactory(slug="hpc", name="HPC")
    cloud = FacilityFactory(slug="cloud", name="Cloud")
    mine = AllocationFactory(project=project, facility=hpc)
    theirs = AllocationFactory(project=other_project, facility=cloud)
    t = dt.datetime
    _job(mine, researcher, t(2026, 1, 5, tzinfo=UTC), wait=10, run=3000, util=80.0, gpus=2)
    _job(mine, researcher, t(2026, 1, 20, tzinfo=UTC), wait=300, run=20, state="failed")
    _job(mine, researcher, t(2026, 1, 25, tzinfo=UTC), wait=None, run=None, state="cancelled")
    _job(theirs, outsider, t(2026, 2, 3, tzinfo=UTC), wait=7200, run=1200, util=40.0, gpus=4)
    _job(theirs, outsider, t(2026, 2, 14, tzinfo=UTC), wait=60, run=0, util=0.0)
    _job(mine, researcher, t(2026, 3, 2, tzinfo=UTC), wait=5, run=None, state="running")
    _job(mine, researcher, t(2026, 3, 9, tzinfo=UTC), wait=90, run=45, state="timeout")
    _job(theirs, outsider, t(2026, 4, 1, tzinfo=UTC), wait=15, run=900, util=55.0)
    return mine, theirs


def _figures(report) -> dict:
    data = dataclasses.asdict(report)
    data.pop("jobs_rolled_at")
    return data


def test_only_ended_months_with_every_job_final_and_charged_settle(jobs):
    # March has a job still running; April is the current month.
    assert settled_months(NOW) == [dt.date(2026, 1, 1), dt.date(2026, 2, 1)]
    # A job that finished within the last day keeps its month open (its charge may be late).
    Job.objects.filter(created_at__month=2).update(finished_at=NOW - dt.timedelta(hours=2))
    assert settled_months(NOW) == [dt.date(2026, 1, 1)]


@pytest.mark.parametrize("group_by", ["pi", "project", "facility", "user"])
@pytest.mark.parametrize("since", [None, dt.date(2026, 1, 1), dt.date(2026, 1, 15)])
def test_the_report_from_rollups_equals_the_report_job_by_job(jobs, admin, group_by, since):
    live = usage_report(admin, group_by=group_by, since=since)
    # January: one allocation's 2-GPU and 1-GPU jobs; February: the other's 4-GPU and 1-GPU.
    assert job_months_rebuild(now=NOW) == 2  # a row an allocation a month
    assert sorted(JobMonthSize.objects.values_list("month", "gpus")) == [
        (dt.date(2026, 1, 1), 1),
        (dt.date(2026, 1, 1), 2),
        (dt.date(2026, 2, 1), 1),
        (dt.date(2026, 2, 1), 4),
    ]
    rolled = usage_report(admin, group_by=group_by, since=since)

    assert _figures(rolled) == _figures(live)
    assert live.jobs_rolled_at is None
    assert (rolled.jobs_rolled_at is not None) == (group_by != "user")  # by user: job by job


def test_a_pi_sees_the_rollups_of_their_projects_only(jobs, pi, admin):
    live = usage_report(pi, group_by="project")
    job_months_rebuild(now=NOW)
    rolled = usage_report(pi, group_by="project")
    assert _figures(rolled) == _figures(live)
    assert {row["group"] for row in rolled.rows} == {jobs[0].project.code}


def test_settled_months_are_read_from_the_rollups(jobs, admin):
    job_months_rebuild(now=NOW)
    mine, _ = jobs
    JobMonth.objects.filter(allocation=mine, month=dt.date(2026, 1, 1)).update(jobs=99)
    report = usage_report(admin, group_by="project")
    january = [r for r in report.rows if r["period"] == dt.date(2026, 1, 1)]
    assert [r["jobs"] for r in january] == [99]  # the planted figure, not the jobs
    # The current month and the month with a running job are counted job by job.
    march = [r for r in report.rows if r["period"] == dt.date(2026, 3, 1)]
    assert [r["jobs"] for r in march] == [2]


def test_a_pass_drops_a_month_that_is_no_longer_settled(jobs):
    job_months_rebuild(now=NOW)
    Job.objects.filter(created_at__month=1, state="failed").update(state="running")
    job_months_rebuild(now=NOW)
    assert set(JobMonth.objects.values_list("month", flat=True)) == {dt.date(2026, 2, 1)}


def test_the_page_shows_the_groups_with_most_use_and_the_csv_every_one(jobs, admin, settings):
    from django.test import Client

    client = Client()
    client.force_login(admin)
    everything = usage_report(admin, group_by="user")
    top = everything.groups[0]["group"]
    shown = usage_report(admin, group_by="user", limit=1)
    hidden = shown.hidden_groups
    assert [g["group"] for g in shown.groups] == [top] and hidden == len(everything.groups) - 1
    assert hidden > 0 and everything.hidden_groups == 0
    assert shown.rows == [r for r in everything.rows if r["group"] == top]
    assert shown.groups == everything.groups[:1]
    assert shown.totals == everything.totals  # the totals stay those of every group
    assert (shown.wait, shown.sizes, shown.split) == (
        everything.wait,
        everything.sizes,
        everything.split,
    )
    assert shown.efficiency == [e for e in everything.efficiency if e["group"] == top]

    settings.PORTAL_REPORT_PAGE_GROUPS = 1
    page = client.get("/reports/usage/?group_by=user").content.decode()
    csv = client.get("/reports/usage/?group_by=user&format=csv&table=groups").content.decode()
    assert f"{hidden} more are in the totals above" in page
    assert len(csv.strip().splitlines()) == 1 + len(everything.groups)


def test_an_hourly_pass_rewrites_recent_months_and_a_daily_one_every_month(jobs):
    job_months_rebuild(now=NOW)
    JobMonth.objects.update(jobs=77)  # drift planted in every month
    later = NOW + dt.timedelta(hours=1)
    job_months_rebuild(now=later)  # hourly: Feb is within three months of April, Jan too
    assert not JobMonth.objects.filter(jobs=77).exists()

    much_later = dt.datetime(2026, 7, 10, tzinfo=UTC)  # Jan and Feb are now long settled
    job_months_rebuild(now=much_later, full=True)
    JobMonth.objects.update(jobs=77)
    job_months_rebuild(now=much_later + dt.timedelta(hours=1))
    assert JobMonth.objects.filter(jobs=77).exists()  # an hourly pass leaves old months
    job_months_rebuild(now=much_later + dt.timedelta(hours=25))
    assert not JobMonth.objects.filter(jobs=77).exists()  # the daily one rewrites them
