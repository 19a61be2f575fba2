"""The usage report's settled part (portal/reports/settled.py): summed once and kept by the
process, it gives the figures of a report summed afresh; every change to what it read (a late
ledger record, a rewrite of the rollups, the job pass, a project's code or PI, a username, a
facility's name) is seen by the next report; the p90 wait over settled and live jobs is the
nearest-rank p90 of every wait."""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import random
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from allocations.models import UsageMonth, UsageRecord
from allocations.rollups import rollup_rebuild
from launcher.job_months import job_months_rebuild
from launcher.models import Job
from portal.reports import settled
from portal.reports.selectors import usage_report
from tests.factories import AllocationFactory, FacilityFactory, charge
from tests.portal.test_report_job_rollups import _job

pytestmark = pytest.mark.django_db
UTC = dt.UTC
NOW = dt.datetime(2026, 4, 10, 12, tzinfo=UTC)
T = dt.datetime


def _usage(allocation, when, seconds, tag=""):
    return charge(
        allocation=allocation,
        source="local",
        external_id=f"{allocation.pk}-{when:%m%d%H}{tag}",
        period_start=when,
        period_end=when,
        gpu_seconds=seconds,
        cost=Decimal(seconds) / 1000,
    )


@pytest.fixture
def world(project, other_project, researcher, outsider):
    """January and February settled; March open (a job still running); April live."""
    hpc = FacilityFactory(slug="hpc", name="HPC")
    cloud = FacilityFactory(slug="cloud", name="Cloud")
    mine = AllocationFactory(project=project, facility=hpc)
    theirs = AllocationFactory(project=other_project, facility=cloud)
    _job(mine, researcher, T(2026, 1, 5, tzinfo=UTC), wait=10, run=3000, util=80.0, gpus=2)
    _job(mine, researcher, T(2026, 1, 20, tzinfo=UTC), wait=300, run=20, state="failed")
    _job(theirs, outsider, T(2026, 2, 3, tzinfo=UTC), wait=7200, run=1200, util=40.0, gpus=4)
    _job(mine, researcher, T(2026, 3, 2, tzinfo=UTC), wait=5, run=None, state="running")
    _job(theirs, outsider, T(2026, 4, 1, tzinfo=UTC), wait=15, run=900, util=55.0)
    for allocation, when, seconds in [
        (mine, T(2026, 1, 6, tzinfo=UTC), 6000),
        (theirs, T(2026, 1, 16, tzinfo=UTC), 900),
        (theirs, T(2026, 2, 4, tzinfo=UTC), 4800),
        (mine, T(2026, 3, 3, tzinfo=UTC), 300),
        (theirs, T(2026, 4, 2, tzinfo=UTC), 900),
    ]:
        _usage(allocation, when, seconds)
    assert job_months_rebuild(now=NOW) == 2  # January: mine; February: theirs
    return mine, theirs


def _afresh(user, **options):
    settled.forget()
    return usage_report(user, **options)


def _tables(queries) -> str:
    return " ".join(q["sql"] for q in queries).lower()


@pytest.mark.parametrize("group_by", ["pi", "project", "facility"])
@pytest.mark.parametrize("since", [None, dt.date(2026, 1, 15), dt.date(2026, 2, 1)])
@pytest.mark.parametrize("limit", [None, 1])
def test_a_kept_settled_part_gives_the_figures_summed_afresh(world, admin, group_by, since, limit):
    options = {"group_by": group_by, "since": since, "limit": limit}
    with CaptureQueriesContext(connection) as first:
        summed = usage_report(admin, **options)
    with CaptureQueriesContext(connection) as second:
        kept = usage_report(admin, **options)
    assert "launcher_jobmonth" in _tables(first.captured_queries)
    # The second report reads no rollup of a settled month: seven queries fewer (five to
    # sum the part, two to read the cells of the groups it shows).
    assert "launcher_jobmonth" not in _tables(second.captured_queries)
    assert len(first.captured_queries) - len(second.captured_queries) == 7
    assert dataclasses.asdict(kept) == dataclasses.asdict(summed)
    assert dataclasses.asdict(_afresh(admin, **options)) == dataclasses.asdict(summed)


@pytest.mark.parametrize("group_by", ["pi", "project", "facility"])
def test_a_kept_part_read_for_a_page_then_whole_gives_every_group_once(world, admin, group_by):
    """The settled part reads the cells of the groups a page shows, then, for the CSV, every
    group's: each of the three, in turn on one kept part, equals the report summed afresh (a
    group read twice would count twice)."""
    options = {"group_by": group_by, "since": None}
    afresh = {
        limit: dataclasses.asdict(_afresh(admin, **options, limit=limit)) for limit in (1, None)
    }
    settled.forget()
    for limit in (1, None, 1, None):
        assert dataclasses.asdict(usage_report(admin, **options, limit=limit)) == afresh[limit]
    whole = afresh[None]["rows"]
    assert len({(r["group"], r["period"]) for r in whole}) == len(whole) > 2


def _by_facility_in_sql(queries) -> int:
    """The queries that sum rollup rows by facility and month."""
    return sum(
        1
        for q in queries.captured_queries
        if ('"allocations_usagemonth"' in q["sql"] or '"launcher_jobmonth"' in q["sql"])
        and 'SELECT "allocations_allocation"."facility_id"' in q["sql"]
        and "GROUP BY" in q["sql"]
    )


def test_a_report_of_few_groups_of_many_allocations_sums_its_cells_by_group(
    world, admin, project, researcher, monkeypatch
):
    """A part of few groups of many allocations each (by facility: 240 cells of a centre's
    year from 52,000 rows) sums every cell by the group's id in the database: the same
    figures as naming and adding up the rows one by one."""
    hpc = world[0].facility
    for i in range(2 * settled.GROUPED):
        allocation = AllocationFactory(project=project, facility=hpc)
        _usage(allocation, T(2026, 1, 7 + i % 20, tzinfo=UTC), 60 * (i + 1))
        _job(allocation, researcher, T(2026, 2, 1 + i % 20, tzinfo=UTC), wait=i, run=30 * i)
    assert job_months_rebuild(now=NOW) == 2 + 2 * settled.GROUPED  # and February's of each
    options = {"group_by": "facility", "since": None}

    with CaptureQueriesContext(connection) as queries:
        grouped = dataclasses.asdict(_afresh(admin, **options))
    assert _by_facility_in_sql(queries) == 2  # the ledger's and the jobs' cells
    monkeypatch.setattr(settled, "GROUPED", 10**9)  # the rows one by one
    with CaptureQueriesContext(connection) as queries:
        one_by_one = dataclasses.asdict(_afresh(admin, **options))
    assert _by_facility_in_sql(queries) == 0
    assert grouped == one_by_one
    hours = {(r["group"], r["period"]): r["gpu_seconds"] for r in grouped["rows"]}
    assert hours[("HPC", dt.date(2026, 1, 1))] == 6000 + sum(60 * (i + 1) for i in range(20))


def test_the_settled_part_is_what_the_report_adds_to(world, admin):
    report = usage_report(admin, group_by="project")
    hours = {(r["group"], r["period"]): r["gpu_seconds"] for r in report.rows}
    # January and February from the settled part, March and April from the live rollups.
    assert hours == {
        ("ABC-DEF-001", dt.date(2026, 1, 1)): 6000,
        ("ABC-DEF-001", dt.date(2026, 3, 1)): 300,
        ("XYZ-OTH-002", dt.date(2026, 1, 1)): 900,
        ("XYZ-OTH-002", dt.date(2026, 2, 1)): 4800,
        ("XYZ-OTH-002", dt.date(2026, 4, 1)): 900,
    }
    assert report.totals["gpu_seconds"] == 12900
    assert report.totals["jobs"] == 5  # March's running job among them
    assert report.split == {"jobs": 0.0, "notebooks": 0.0, "other": 12900 / 3600}
    # A month later April settles too: March, still open, is live between two settled runs.
    job_months_rebuild(now=NOW + dt.timedelta(days=30))
    later = usage_report(admin, group_by="project")
    assert {(r["group"], r["period"]): r["gpu_seconds"] for r in later.rows} == hours
    assert dataclasses.asdict(later) == dataclasses.asdict(_afresh(admin, group_by="project"))
    assert later.jobs_rolled_at != report.jobs_rolled_at


def _change_and_compare(admin, group_by, change, capture):
    before = usage_report(admin, group_by=group_by)
    with capture(execute=True):
        change()
    kept = usage_report(admin, group_by=group_by)
    assert dataclasses.asdict(kept) == dataclasses.asdict(_afresh(admin, group_by=group_by))
    assert dataclasses.asdict(kept) != dataclasses.asdict(before)
    return kept


def test_a_late_ledger_record_in_a_settled_month_is_in_the_next_report(
    world, admin, django_capture_on_commit_callbacks
):
    mine, _ = world
    report = _change_and_compare(
        admin,
        "project",
        lambda: _usage(mine, T(2026, 1, 7, tzinfo=UTC), 1200, "late"),
        django_capture_on_commit_callbacks,
    )
    january = {(r["group"], r["period"]): r["gpu_seconds"] for r in report.rows}
    assert january[("ABC-DEF-001", dt.date(2026, 1, 1))] == 7200


def test_a_rollup_rewrite_is_in_the_next_report(world, admin, django_capture_on_commit_callbacks):
    # Drift the reconcile finds and rewrites: the stored month no longer its records' sum.
    UsageMonth.objects.filter(month=dt.date(2026, 2, 1)).update(gpu_seconds=1)
    settled.forget()
    report = _change_and_compare(
        admin, "facility", rollup_rebuild, django_capture_on_commit_callbacks
    )
    assert report.totals["gpu_seconds"] == 12900


def test_the_job_pass_is_in_the_next_report(world, admin):
    before = usage_report(admin, group_by="pi")
    # A settled month's job changed long after (a state corrected): the daily full pass rolls
    # its month again, and the report's key changes with the month's `rolled_at`.
    Job.objects.filter(state="failed").update(state="succeeded")
    job_months_rebuild(now=NOW + dt.timedelta(hours=1), full=True)
    kept = usage_report(admin, group_by="pi")
    assert kept.totals["failed"] == before.totals["failed"] - 1 == 0
    assert dataclasses.asdict(kept) == dataclasses.asdict(_afresh(admin, group_by="pi"))


@pytest.mark.parametrize(
    "group_by, rename, name",
    [
        (
            "project",
            lambda w: w[0].project.__class__.objects.get(pk=w[0].project_id),
            "NEW-CODE-003",
        ),
        ("pi", lambda w: w[0].project.pi, "paula2"),
        ("facility", lambda w: w[0].facility, "HPC two"),
    ],
)
def test_a_rename_of_what_a_report_groups_by_is_in_the_next_report(
    world, admin, group_by, rename, name, django_capture_on_commit_callbacks
):
    field = {"project": "code", "pi": "username", "facility": "name"}[group_by]

    def change():
        target = rename(world)
        setattr(target, field, name)
        target.save()

    report = _change_and_compare(admin, group_by, change, django_capture_on_commit_callbacks)
    assert name in {g["group"] for g in report.groups}


def test_a_project_given_a_new_pi_moves_its_settled_months(
    world, admin, outsider, django_capture_on_commit_callbacks
):
    mine, _ = world

    def change():
        project = mine.project
        project.pi = outsider
        project.save()

    report = _change_and_compare(admin, "pi", change, django_capture_on_commit_callbacks)
    assert [g["group"] for g in report.groups] == ["charlie"]


def _nearest_rank_p90(waits: list[int]) -> float:
    return float(sorted(waits)[math.ceil(0.9 * len(waits)) - 1])


@pytest.mark.parametrize("depth", [None, 0, 1])
def test_the_p90_wait_merges_settled_and_live_waits(project, researcher, admin, monkeypatch, depth):
    """Settled January (37 waits) and live April (23): the nearest-rank p90 of all 60, whether
    the kept waits hold every one needed (`None`: as kept) or too few (read from the jobs)."""
    if depth is not None:
        monkeypatch.setattr(settled, "wait_depth", lambda waited: depth)
    allocation = AllocationFactory(project=project, facility=FacilityFactory(slug="hpc"))
    waits = []
    for i in range(37):
        waits.append((i * 7919) % 1000 + 1)
        _job(allocation, researcher, T(2026, 1, 1 + i % 28, i % 24, tzinfo=UTC), wait=waits[-1])
    for i in range(23):
        waits.append((i * 104729) % 3000 + 1)
        _job(allocation, researcher, T(2026, 4, 1 + i % 9, i, tzinfo=UTC), wait=waits[-1])
    job_months_rebuild(now=NOW)
    for _ in range(2):  # summed, then kept
        wait = usage_report(admin, group_by="project").wait
        assert wait["jobs"] == 60
        assert wait["p90_seconds"] == _nearest_rank_p90(waits)
        assert wait["mean_seconds"] == pytest.approx(sum(waits) / 60)
    # Settled waits only (no live job started): from the kept ones.
    january = usage_report(admin, group_by="project", since=dt.date(2026, 1, 1))
    assert january.wait["p90_seconds"] == _nearest_rank_p90(waits)


def test_a_process_keeps_as_many_settled_parts_as_set(world, admin, settings):
    settings.PORTAL_REPORT_SETTLED_KEPT = 1

    def reads_rollups(group_by):
        with CaptureQueriesContext(connection) as ctx:
            usage_report(admin, group_by=group_by)
        return "launcher_jobmonth" in _tables(ctx.captured_queries)

    assert [reads_rollups(g) for g in ("pi", "pi", "project", "pi")] == [True, False, True, True]
    settings.PORTAL_REPORT_SETTLED_KEPT = 2
    assert [reads_rollups(g) for g in ("project", "pi", "project")] == [True, False, False]


def test_the_kth_longest_of_two_sorted_parts_is_that_of_their_union():
    rng = random.Random(36)
    for _ in range(2000):
        a = sorted((rng.randint(0, 20) for _ in range(rng.randint(0, 30))), reverse=True)
        b = sorted((rng.randint(0, 20) for _ in range(rng.randint(0, 30))), reverse=True)
        if not a and not b:
            continue
        union = sorted(a + b, reverse=True)
        k = rng.randrange(len(union))
        assert settled.kth_longest(a, b, k) == union[k], (a, b, k)


def test_a_new_allocations_live_rows_are_named_though_the_kept_part_has_not_met_it(
    world, admin, project
):
    usage_report(admin, group_by="facility")  # kept: names every allocation there was then
    newer = AllocationFactory(project=project, facility=FacilityFactory(slug="new", name="New"))
    _usage(newer, T(2026, 4, 3, tzinfo=UTC), 3600)
    _job(newer, project.pi, T(2026, 4, 3, tzinfo=UTC), wait=20, run=60, util=70.0)
    report = usage_report(admin, group_by="facility")
    rows = {(r["group"], r["period"]): (r["gpu_seconds"], r["jobs"]) for r in report.rows}
    assert rows[("New", dt.date(2026, 4, 1))] == (3600, 1)
    assert {e["group"] for e in report.efficiency} >= {"New"}
    assert dataclasses.asdict(report) == dataclasses.asdict(_afresh(admin, group_by="facility"))


@pytest.mark.parametrize("since", [None, dt.date(2026, 1, 15)])
def test_the_split_and_hours_by_facility_come_from_the_live_cells_as_from_their_own_sums(
    world, admin, researcher, since
):
    """By PI, project or facility the live part's split (jobs, notebooks, other) and its hours
    by facility are added up from its usage cells, not read again: the same figures as by user,
    which reads them in queries of their own, and as the records summed by hand; a part month
    (`since` mid-January) included."""
    mine, theirs = world
    job = Job.objects.filter(allocation=mine).order_by("created_at").first()
    when = T(2026, 1, 22, tzinfo=UTC)
    charge(allocation=mine, source="local", external_id="job-record", job_id=job.pk, period_start=when,
           period_end=when, gpu_seconds=1200, cost=Decimal(1))  # fmt: skip
    for allocation, when, seconds in [(mine, T(2026, 1, 23, tzinfo=UTC), 600),
                                      (theirs, T(2026, 4, 3, tzinfo=UTC), 60)]:  # fmt: skip
        charge(allocation=allocation, source="local", external_id=f"notebook/{seconds}/1/nb",
               period_start=when, period_end=when, gpu_seconds=seconds, cost=Decimal(1))  # fmt: skip
    records = UsageRecord.objects.all()
    if since:
        records = records.filter(period_start__gte=dt.datetime(2026, 1, 15, tzinfo=UTC))
    jobs = sum(r.gpu_seconds for r in records if r.job_id)
    notebooks = sum(r.gpu_seconds for r in records if r.external_id.startswith("notebook/"))
    total = sum(r.gpu_seconds for r in records)
    assert jobs == 1200 and notebooks == 660  # the case is what it means to be
    expected = {
        "jobs": jobs / 3600,
        "notebooks": notebooks / 3600,
        "other": (total - jobs - notebooks) / 3600,
    }
    by_user = usage_report(admin, group_by="user", since=since)
    assert by_user.split == pytest.approx(expected)
    for group_by in ("pi", "project", "facility"):
        report = _afresh(admin, group_by=group_by, since=since)
        assert report.split == pytest.approx(expected), group_by
        assert report.units == pytest.approx(by_user.units), group_by
        assert usage_report(admin, group_by=group_by, since=since).units == report.units
    assert by_user.units == pytest.approx({"GPU-hours": total / 3600})


def test_the_first_groups_ranked_from_the_settled_first_and_the_live_are_those_of_every_group():
    """cells.ranked ranks the settled part's first `limit` groups and the live part's only; for
    2,000 random cases (ties, groups in one part or both, a negative live correction) it gives
    the groups, totals and count of ranking every group."""
    from portal.reports.cells import by_use, merged_totals, ranked, zero

    rng = random.Random(36)

    def totals(groups, low=0):
        out = {}
        for g in groups:
            out[g] = zero(g)
            out[g]["gpu_seconds"] = rng.choice([rng.randrange(low, 50), 7])  # ties on 7
        return out

    for _ in range(2000):
        names = [f"g{i}" for i in range(rng.randrange(0, 40))]
        settled_part = totals(rng.sample(names, rng.randrange(0, len(names) + 1)))
        live = totals(rng.sample(names, rng.randrange(0, len(names) + 1)), low=rng.choice([0, -60]))
        limit = rng.choice([None, 1, 3, 10])
        everything = merged_totals(settled_part, live)
        expected = by_use(everything)
        shown, kept, count = ranked(settled_part, by_use(settled_part), live, limit)
        assert shown == (expected if limit is None else expected[:limit])
        assert count == len(everything)
        assert {g: kept[g] for g in shown} == {g: everything[g] for g in shown}
