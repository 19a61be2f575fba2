"""The usage report: figures equal hand-computed sums over the fixture rows, the CSV matches
the page's table, the API (and its CSV) is in the OpenAPI document, scope is enforced, and the
number of queries does not grow with the rows."""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
from decimal import Decimal

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from allocations.models import UsageRecord
from allocations.rollups import rollup_rebuild
from launcher.models import Job
from portal.reports.tables import Table, to_csv
from tests.factories import AllocationFactory, FacilityFactory, ProjectFactory, UserFactory, charge

pytestmark = pytest.mark.django_db
JAN = dt.datetime(2026, 1, 10, 12, tzinfo=dt.UTC)
FEB = dt.datetime(2026, 2, 3, 9, tzinfo=dt.UTC)


def _usage(allocation, n, when, gpu_seconds, cost, job=None, source="local"):
    return charge(
        allocation=allocation,
        source=source,
        external_id=f"{allocation.pk}-{n}-{when:%m}",
        period_start=when,
        period_end=when,
        gpu_seconds=gpu_seconds,
        cost=Decimal(cost),
        job_id=job.pk if job else None,
    )


def _job(
    allocation,
    user,
    *,
    created,
    gpus=1,
    wait=None,
    run=None,
    state="succeeded",
    gpu_seconds=0,
    util=None,
):
    started = created + dt.timedelta(seconds=wait) if wait is not None else None
    return Job.objects.create(
        allocation=allocation,
        created_by=user,
        gpus=gpus,
        state=state,
        token=f"t{Job.objects.count()}",
        created_at=created,
        submitted_at=created,
        started_at=started,
        finished_at=started + dt.timedelta(seconds=run) if started and run is not None else None,
        gpu_seconds=gpu_seconds,
        utilisation_mean=util,
        utilisation_source="gpu" if util else "",
    )


@pytest.fixture
def world(pi, researcher, project, outsider, other_project):
    """Two projects on two facilities, usage in January and February, six jobs."""
    hpc = FacilityFactory(slug="hpc", name="HPC", gpu_hour_rate=Decimal("2"))
    cloud = FacilityFactory(slug="cloud", name="Cloud", gpu_hour_rate=Decimal("3"))
    a1 = AllocationFactory(project=project, facility=hpc)
    a2 = AllocationFactory(project=project, facility=cloud)
    a3 = AllocationFactory(project=other_project, facility=hpc)
    r1 = _job(a1, researcher, created=JAN, wait=10, run=3000, gpu_seconds=3000, util=80.0)
    _job(
        a1,
        researcher,
        created=JAN,
        gpus=2,
        wait=30,
        run=30,
        state="failed",
        gpu_seconds=60,
        util=20.0,
    )
    p1 = _job(a1, pi, created=FEB, gpus=4, wait=50, run=600, gpu_seconds=2400)
    p2 = _job(a2, pi, created=FEB, gpus=2, wait=70, run=20, gpu_seconds=40)
    _job(a2, pi, created=FEB, gpus=1, state="failed")  # never started
    o1 = _job(a3, outsider, created=JAN, wait=1000, run=100, gpu_seconds=100)
    # The ledger: records attributed to the job they charge (job_id), one of no portal job.
    _usage(a1, 1, JAN, 3600, "2.00", job=r1)
    _usage(a1, 2, JAN, 7200, "4.00")  # not a portal job
    _usage(a1, 3, FEB, 1800, "1.00", job=p1)
    _usage(a2, 1, FEB, 36000, "30.50", job=p2, source="cloud")  # a cloud worker's instance time
    _usage(a3, 1, JAN, 720, "0.40", job=o1)
    return {"hpc": hpc, "cloud": cloud, "outsider": outsider.username}


def _get(client, **params):
    return client.get("/api/v1/reports/usage/", params)


def test_figures_by_project_and_month_equal_the_hand_computed_sums(api, reviewer, world):
    body = _get(api.as_user(reviewer), group_by="project", period="month").json()
    rows = {(r["group"], r["period"]): r for r in body["rows"]}
    jan = rows[("ABC-DEF-001", "2026-01-01")]
    assert jan["gpu_seconds"] == 3600 + 7200 and jan["gpu_hours"] == 3.0
    assert Decimal(jan["cost"]) == Decimal("6.00")
    assert (jan["jobs"], jan["failed"], jan["short"]) == (2, 1, 1)
    feb = rows[("ABC-DEF-001", "2026-02-01")]
    assert feb["gpu_seconds"] == 1800 + 36000 and Decimal(feb["cost"]) == Decimal("31.50")
    assert (feb["jobs"], feb["failed"], feb["short"]) == (3, 1, 1)
    other = rows[("XYZ-OTH-002", "2026-01-01")]
    assert other["gpu_seconds"] == 720 and other["jobs"] == 1
    groups = {g["group"]: g for g in body["groups"]}
    # 5 jobs: 2 failed, 2 short, one of them both: 3 short or failed.
    assert groups["ABC-DEF-001"]["short_or_failed_share"] == pytest.approx(3 / 5)
    assert body["totals"]["gpu_seconds"] == 3600 + 7200 + 1800 + 36000 + 720
    assert Decimal(body["totals"]["cost"]) == Decimal("37.90")
    # Waits of the five jobs that started: 10, 30, 50, 70, 1000 s.
    assert body["wait"] == {"jobs": 5, "mean_seconds": 232.0, "p90_seconds": 1000.0}
    assert body["sizes"] == [
        {"gpus": 1, "jobs": 3, "gpu_hours": 3100 / 3600},
        {"gpus": 2, "jobs": 2, "gpu_hours": 100 / 3600},
        {"gpus": 4, "jobs": 1, "gpu_hours": 2400 / 3600},
    ]
    # (80 x 3000 + 20 x 60) / 3060, weighted by GPU-seconds.
    eff = body["efficiency"][0]
    assert eff["group"] == "ABC-DEF-001" and eff["jobs"] == 2
    assert eff["mean_percent"] == pytest.approx((80 * 3000 + 20 * 60) / 3060)


def test_by_facility_pi_and_user(api, reviewer, world):
    client = api.as_user(reviewer)
    facility = {g["group"]: g for g in _get(client, group_by="facility").json()["groups"]}
    assert facility["HPC"]["gpu_seconds"] == 3600 + 7200 + 1800 + 720
    assert facility["Cloud"]["gpu_seconds"] == 36000
    pis = {g["group"]: g for g in _get(client, group_by="pi").json()["groups"]}
    assert pis["paula"]["gpu_seconds"] == 3600 + 7200 + 1800 + 36000
    assert pis["charlie"]["gpu_seconds"] == 720
    users = {g["group"]: g for g in _get(client, group_by="user", period="week").json()["groups"]}
    # By user: the ledger's records, by who launched the job each is attributed to.
    assert users["rosalind"]["gpu_seconds"] == 3600
    assert Decimal(users["rosalind"]["cost"]) == Decimal("2.00")
    # paula's Slurm-style record and her cloud job's instance time (it was missed: 1800 only).
    assert users["paula"]["gpu_seconds"] == 1800 + 36000 and users["paula"]["jobs"] == 3
    assert Decimal(users["paula"]["cost"]) == Decimal("31.50")
    assert users["-"]["gpu_seconds"] == 7200  # a record of no portal job
    assert users[world["outsider"]]["gpu_seconds"] == 720
    # One ledger: the user totals are the project totals.
    by_project = _get(client, group_by="project", period="week").json()["totals"]
    by_user = _get(client, group_by="user", period="week").json()["totals"]
    assert by_user["gpu_seconds"] == by_project["gpu_seconds"] == 3600 + 7200 + 1800 + 36000 + 720
    assert Decimal(by_user["cost"]) == Decimal(by_project["cost"]) == Decimal("37.90")


def test_a_pi_sees_only_their_projects_and_others_get_404(api, pi, researcher, world):
    body = _get(api.as_user(pi), group_by="project").json()
    assert {r["group"] for r in body["rows"]} == {"ABC-DEF-001"}
    assert body["wait"]["jobs"] == 4
    assert _get(api.as_user(researcher)).status_code == 404
    assert _get(api.as_user(pi), group_by="galaxy").status_code == 400
    for who, params, status in ((researcher, {}, 404), (pi, {"group_by": "galaxy"}, 400)):
        refused = _get(api.as_user(who), format="csv", **params)  # errors stay JSON, as documented
        assert refused.status_code == status and refused["Content-Type"] == "application/json"
        assert refused.json()
    client = Client()
    client.force_login(researcher)
    assert client.get("/reports/usage/").status_code == 404


def test_every_csv_matches_the_page_table(reviewer, world):
    client = Client()
    client.force_login(reviewer)
    page = client.get("/reports/usage/?group_by=facility&period=month").content.decode()
    assert "vendor/plotly/plotly.min.js" in page and "cdn" not in page.lower()
    for name in ("usage", "groups", "wait", "sizes", "efficiency"):
        response = client.get(
            "/reports/usage/",
            {"group_by": "facility", "period": "month", "format": "csv", "table": name},
        )
        assert response["Content-Type"].startswith("text/csv")
        lines = list(csv.reader(io.StringIO(response.content.decode())))
        table = re.search(rf'<table id="table-{name}">(.*?)</table>', page, re.S).group(1)
        headers = re.findall(r"<th scope=\"col\">(.*?)</th>", table)
        cells = [
            re.findall(r"<td[^>]*>(.*?)</td>", row)
            for row in re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>")[1], re.S)
        ]
        assert lines[0] == [h.replace("&lt;", "<") for h in headers]
        assert len(lines) - 1 == len(cells)
        for csv_row, html_row in zip(lines[1:], cells):
            for raw, shown in zip(csv_row, html_row):
                try:
                    assert float(raw) == pytest.approx(
                        float(shown.replace(",", "")), rel=0.01, abs=0.01
                    )
                except ValueError:
                    assert raw == shown or (raw == "" and shown == "-")


def test_a_csv_reads_the_job_figures_of_its_own_table_only(reviewer, world):
    """A CSV of the usage table reads no wait, size or utilisation of the jobs (a p90 over a
    centre's year of jobs is a fifth of a second); the page and each figure's own CSV do, on
    the page and the API alike."""
    client = Client()
    client.force_login(reviewer)

    def sql(path: str, **params) -> str:
        with CaptureQueriesContext(connection) as queries:
            assert client.get(path, {"group_by": "facility", **params}).status_code == 200
        return " ".join(q["sql"] for q in queries.captured_queries)

    waits = '"launcher_job"."submitted_at" IS NOT NULL'
    sizes = 'SELECT "launcher_job"."gpus"'
    utilisation = '"launcher_job"."utilisation_source"'
    page = sql("/reports/usage/")
    assert all(figure in page for figure in (waits, sizes, utilisation))
    for path in ("/reports/usage/", "/api/v1/reports/usage/"):
        usage = sql(path, format="csv", table="usage")
        assert not any(figure in usage for figure in (waits, sizes, utilisation))
        assert waits in sql(path, format="csv", table="wait")
        assert sizes in sql(path, format="csv", table="sizes")
        assert utilisation in sql(path, format="csv", table="efficiency")


def test_the_report_api_is_in_the_openapi_document_with_its_csv(api, researcher):
    schema = api.as_user(researcher).get("/api/v1/schema/?format=json").json()
    operation = schema["paths"]["/api/v1/reports/usage/"]["get"]
    names = {p["name"] for p in operation["parameters"]}
    assert {"group_by", "period", "format"} <= names
    assert "text/csv" in operation["responses"]["200"]["content"]


def test_the_api_csv_is_the_main_table(api, reviewer, world):
    response = api.as_user(reviewer).get("/api/v1/reports/usage/?group_by=project&format=csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    lines = list(csv.reader(io.StringIO(response.content.decode())))
    assert lines[0][:3] == ["Project", "Month", "GPU-hours"]
    assert ["ABC-DEF-001", "2026-01-01", "3", "6.0000", "2", "1", "1"] in lines


def test_queries_do_not_grow_with_rows(api, reviewer, world, researcher):
    client = api.as_user(reviewer)
    with CaptureQueriesContext(connection) as before:
        _get(client, group_by="user")
    project = ProjectFactory(code="MORE-ROWS-1", pi=UserFactory(username="pim"))
    allocation = AllocationFactory(project=project, facility=world["hpc"])
    for n in range(30):
        job = _job(allocation, researcher, created=FEB, wait=n, run=n, gpu_seconds=n)
        _usage(allocation, n, JAN + dt.timedelta(days=n), 60, "0.10", job=job)
    with CaptureQueriesContext(connection) as after:
        _get(client, group_by="user")
    assert len(after) == len(before) <= 12


def test_csv_gpu_hours_are_exact_decimals_not_float_artefacts():
    table = Table("t", "t", ["GPU-hours", "Cost"], [[194 / 3600, Decimal("0.0500")]], "")
    assert to_csv(table).splitlines()[1] == "0.053889,0.0500"


def test_one_figure_per_fact_the_header_is_its_parts_and_unrun_jobs_are_not_jobs(
    client, api, reviewer, world, researcher, project
):
    """Issue 39: the header's GPU-hours are the sum of the table's rows, split into jobs,
    notebooks and other, the job-size table says it holds jobs only, and a job cancelled before
    it started (a cancelled sweep's held cells) is not counted as a job."""
    hpc = AllocationFactory(project=project, facility=world["hpc"])
    charge(allocation=hpc, source="local", external_id="notebook/7/1/nb-7", period_start=FEB,
           period_end=FEB, gpu_seconds=900, cost=Decimal("0.50"))  # fmt: skip
    before = _get(api.as_user(reviewer)).json()
    for _ in range(6):
        _job(hpc, researcher, created=FEB, state="cancelled")  # never started

    body = _get(api.as_user(reviewer)).json()

    assert body["totals"]["jobs"] == before["totals"]["jobs"] == 6
    assert sum(s["jobs"] for s in body["sizes"]) == 6
    split, total = body["split"], body["totals"]["gpu_hours"]
    assert split == {"jobs": 11.7, "notebooks": 0.25, "other": 2.0}  # (3600+1800+36000+720) s
    assert sum(split.values()) == pytest.approx(total)
    assert total == pytest.approx(sum(r["gpu_hours"] for r in body["rows"]))
    client.force_login(reviewer)
    page = client.get("/reports/usage/").content.decode()
    header = re.search(r'<small id="report-totals">(.*?)</small>', page).group(1)
    assert header.startswith("13.95 GPU-hours (11.70 by jobs, 0.25 by notebooks, 2.00 other)")
    assert header.endswith("6 jobs")
    assert "Jobs only: notebook sessions (0.25 GPU-hours) and other records (2.00)" in page
    UsageRecord.objects.filter(external_id="notebook/7/1/nb-7").update(gpu_seconds=13)
    rollup_rebuild()  # edited around the ledger (records are append-only): its months too
    tiny = client.get("/reports/usage/").content.decode()
    assert "notebook sessions (0.0036 GPU-hours)" in tiny  # 13 s: never rounded to zero


def test_a_tables_rows_escape_what_a_group_is_named():
    """The page's rows are written in one pass (`Table.body`), not by the template: a name is
    escaped as the template would, numbers are shown by the one rounding rule."""
    table = Table("usage", "t", ["Group", "Hours", "Jobs"], [['<b onclick="x">', 0.004, 1234]], "")
    assert str(table.body) == (
        "<tr><td>&lt;b onclick=&quot;x&quot;&gt;</td>"
        '<td class="num">0.004</td><td class="num">1,234</td></tr>'
    )
