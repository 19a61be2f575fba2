"""Burn rate and run-out (allocations/burn.py): an allocation charged steadily runs out when its
use says it will, on the page, the dashboard, the API and `portal allocations`; no use, or too
little history, is no projection, and says why."""

from __future__ import annotations

import datetime as dt
import json
import re
from decimal import Decimal

import pytest
from django.test import Client
from django.utils import timezone

from allocations.burn import allocation_burn
from allocations.charts import PROJECTION_LABEL, allocation_charts
from tests.factories import AllocationFactory, charge

pytestmark = pytest.mark.django_db
BURN_CHART = re.compile(r'<script id="burn-down-data" type="application/json">(.*?)</script>')


def use(allocation, *, days_ago: int, hours: float, cost: str = "0", n: int = 0) -> None:
    """A charge whose period ended `days_ago` days ago (0: today)."""
    moment = timezone.now() - dt.timedelta(days=days_ago)
    charge(
        allocation=allocation,
        source="local",
        external_id=f"burn-{allocation.pk}-{days_ago}-{n}",
        period_start=moment - dt.timedelta(hours=1),
        period_end=moment,
        gpu_seconds=int(hours * 3600),
        cost=Decimal(cost),
    )


@pytest.fixture
def steady(project, facility):
    """100 GPU-hours, 40 used: 12 three weeks ago, then 2 a day for the last 14 days."""
    today = timezone.localdate()
    allocation = AllocationFactory(
        project=project,
        facility=facility,
        gpu_hours=Decimal(100),
        start_date=today - dt.timedelta(days=20),
        end_date=today + dt.timedelta(days=45),
    )
    use(allocation, days_ago=20, hours=12)
    for days_ago in range(1, 15):
        use(allocation, days_ago=days_ago, hours=2)
    allocation.refresh_from_db()
    assert allocation.gpu_hours_used == 40
    return allocation


def test_a_steady_two_hours_a_day_runs_out_thirty_days_from_today(steady):
    burn = allocation_burn(steady)
    today = timezone.localdate()
    assert burn.rate_7d.gpu_hours_per_day == 2 and burn.rate_7d.days == 7
    assert burn.rate_30d.gpu_hours_per_day == 2 and burn.rate_30d.days == 20  # since its start
    # 60 GPU-hours left (granted - charged) at 2 a day: 30 days.
    assert burn.runs_out_gpu_hours == today + dt.timedelta(days=30) == burn.runs_out_on
    assert burn.before_end_date and burn.days_early == 15  # the end date is 45 days away
    assert burn.runs_out_early
    assert "started on" in burn.rate_basis and "reservations" in burn.runs_out_basis


def test_the_api_gives_the_rate_and_the_run_out_date(steady, api, researcher):
    today = timezone.localdate()
    body = api.as_user(researcher).get(f"/api/v1/allocations/{steady.pk}/").json()
    assert body["burn_rate"] == {
        "gpu_hours_per_day_7d": 2.0,
        "gpu_hours_per_day_30d": 2.0,
        "cost_per_day_7d": None,  # no budget
        "cost_per_day_30d": None,
        "basis": body["burn_rate"]["basis"],
    }
    assert body["runs_out_on"] == {
        "gpu_hours": (today + dt.timedelta(days=30)).isoformat(),
        "budget": None,
        "before_end_date": True,
        "basis": body["runs_out_on"]["basis"],
    }
    assert (
        "7 days" in body["burn_rate"]["basis"]
        and "granted - charged" in (body["runs_out_on"]["basis"])
    )
    listed = api.as_user(researcher).get("/api/v1/allocations/").json()["results"]
    (row,) = [a for a in listed if a["id"] == steady.pk]
    assert row["burn_rate"] == body["burn_rate"] and row["runs_out_on"] == body["runs_out_on"]


def test_the_schema_declares_the_new_fields_with_types(api, researcher):
    schema = api.as_user(researcher).get("/api/v1/schema/?format=json").json()
    components = schema["components"]["schemas"]
    allocation = components["Allocation"]["properties"]
    assert allocation["burn_rate"]["allOf"][0]["$ref"].endswith("/BurnRate")
    assert allocation["runs_out_on"]["allOf"][0]["$ref"].endswith("/RunsOut")
    rate = components["BurnRate"]["properties"]
    assert (
        rate["gpu_hours_per_day_7d"]["type"] == "number"
        and rate["gpu_hours_per_day_7d"]["nullable"]
    )
    assert rate["cost_per_day_7d"]["type"] == "string"  # money is a decimal string
    runs_out = components["RunsOut"]["properties"]
    assert runs_out["gpu_hours"]["format"] == "date" and runs_out["gpu_hours"]["nullable"]
    assert runs_out["before_end_date"]["type"] == "boolean"


def test_no_use_in_the_last_seven_days_is_no_run_out_date(project, facility, api, researcher):
    today = timezone.localdate()
    idle = AllocationFactory(
        project=project, facility=facility, start_date=today - dt.timedelta(days=40)
    )
    use(idle, days_ago=9, hours=30)  # outside the 7-day window, inside the 30-day one
    use(idle, days_ago=0, hours=5)  # today: not a whole day yet, not counted
    body = api.as_user(researcher).get(f"/api/v1/allocations/{idle.pk}/").json()
    assert body["burn_rate"]["gpu_hours_per_day_7d"] == 0.0
    assert body["burn_rate"]["gpu_hours_per_day_30d"] == 1.0  # 30 GPU-hours over 30 days
    assert body["runs_out_on"]["gpu_hours"] is None
    assert body["runs_out_on"]["before_end_date"] is False
    assert body["runs_out_on"]["basis"].startswith("No use in the last 7 days")


def test_a_young_allocations_rate_is_its_use_over_the_days_it_has_existed(project, facility):
    today = timezone.localdate()
    young = AllocationFactory(
        project=project,
        facility=facility,
        gpu_hours=Decimal(100),
        start_date=today - dt.timedelta(days=3),
        end_date=today + dt.timedelta(days=300),
    )
    for days_ago in (1, 2, 3):
        use(young, days_ago=days_ago, hours=3)
    young.refresh_from_db()  # the ledger's columns moved with the charges
    burn = allocation_burn(young)
    assert burn.rate_7d.days == 3 and burn.rate_7d.gpu_hours_per_day == 3  # not 9 / 7
    # 91 GPU-hours left at 3 a day: 30.3 days, so it runs out on the 31st.
    assert burn.runs_out_on == today + dt.timedelta(days=31)
    assert burn.before_end_date and burn.days_early == 300 - 31


def test_one_day_of_history_is_not_enough_for_a_projection(project, facility, pi):
    today = timezone.localdate()
    new = AllocationFactory(
        project=project, facility=facility, start_date=today - dt.timedelta(days=1)
    )
    use(new, days_ago=1, hours=50)
    burn = allocation_burn(new)
    assert burn.rate_7d.gpu_hours_per_day == 50 and burn.runs_out_on is None
    assert "not enough data yet for a projection" in burn.runs_out_basis.lower()
    client = Client()
    client.force_login(pi)
    page = client.get(f"/allocations/{new.pk}/").content.decode()
    note = re.search(r'id="projection-note">(.*?)</p>', page, re.S).group(1)
    assert "Not enough data yet for a projection" in note
    figure = json.loads(BURN_CHART.search(page).group(1))
    assert PROJECTION_LABEL not in [trace["name"] for trace in figure["data"]]


def test_money_runs_out_by_the_budgets_own_rate(project, facility, api, researcher):
    today = timezone.localdate()
    cloud = AllocationFactory(
        project=project,
        facility=facility,
        gpu_hours=Decimal(1000),
        budget=Decimal("100.00"),
        start_date=today - dt.timedelta(days=10),
        end_date=today + dt.timedelta(days=90),
    )
    for days_ago in range(1, 8):
        use(cloud, days_ago=days_ago, hours=1, cost="4.0000")  # 28.00 spent, 4.00 a day
    body = api.as_user(researcher).get(f"/api/v1/allocations/{cloud.pk}/").json()
    assert body["burn_rate"]["cost_per_day_7d"] == "4.0000"
    assert body["burn_rate"]["cost_per_day_30d"] == "2.8000"  # 28.00 over its 10 days
    # 72.00 left at 4.00 a day: 18 days; the GPU-hours (993 at 1 a day) last far longer.
    assert body["runs_out_on"]["budget"] == (today + dt.timedelta(days=18)).isoformat()
    assert body["runs_out_on"]["gpu_hours"] == (today + dt.timedelta(days=993)).isoformat()
    assert body["runs_out_on"]["before_end_date"] is True
    assert allocation_burn(cloud).runs_out_what == "budget"


def test_the_chart_draws_used_against_granted_and_the_projection_to_the_run_out(steady):
    burn = allocation_burn(steady)
    figure = allocation_charts(steady, burn)["burn_down"]
    used, granted, _even, projected = figure["data"]
    assert used["y"][0] == 0 and used["y"][-1] == pytest.approx(40)
    assert granted["y"] == [100, 100]
    assert granted["x"] == [steady.start_date.isoformat(), steady.end_date.isoformat()]
    assert projected["name"] == PROJECTION_LABEL and projected["line"]["dash"] == "dash"
    run_out = burn.runs_out_on
    assert projected["x"] == [burn.today.isoformat(), run_out.isoformat()]  # before the end
    assert projected["y"] == [pytest.approx(40), 100]
    low, high = figure["layout"]["yaxis"]["range"]
    assert low == 0 and high >= 100


def test_a_projection_past_the_end_date_stops_there(project, facility):
    today = timezone.localdate()
    slow = AllocationFactory(
        project=project,
        facility=facility,
        gpu_hours=Decimal(100),
        start_date=today - dt.timedelta(days=10),
        end_date=today + dt.timedelta(days=20),
    )
    for days_ago in range(1, 8):
        use(slow, days_ago=days_ago, hours=1)  # 93 left at 1 a day: day 93, past the end
    slow.refresh_from_db()
    burn = allocation_burn(slow)
    projected = allocation_charts(slow, burn)["burn_down"]["data"][-1]
    assert projected["name"] == PROJECTION_LABEL
    assert projected["x"][-1] == slow.end_date.isoformat()
    assert projected["y"][-1] == pytest.approx(7 + 93 * 20 / 93)  # 20 more days at the rate


def test_the_page_and_the_dashboard_show_the_rate_and_the_date(steady, researcher):
    client = Client()
    client.force_login(researcher)
    out = (timezone.localdate() + dt.timedelta(days=30)).strftime("%d %b %Y")
    page = client.get(f"/allocations/{steady.pk}/").content.decode()
    rate = re.sub(r"<[^>]+>", "", re.search(r'id="burn-rate">(.*?)</dd>', page, re.S).group(1))
    assert rate.startswith("2.00 GPU-hours a day over the last 7 days, 2.00 over the last 30")
    runs_out = re.sub(r"<[^>]+>", "", re.search(r'id="runs-out">(.*?)</dd>', page, re.S).group(1))
    assert runs_out.startswith(f"GPU-hours on {out}: 15 days before the end date")
    dashboard = client.get("/").content.decode()
    cell = re.search(r'class="runs-out"[^>]*>(.*?)</td>', dashboard, re.S).group(1)
    assert out in cell and "before the end" in cell and "2.00" in cell


def test_portal_allocations_has_a_runs_out_column_within_80_columns(monkeypatch, capsys):
    from rich.console import Console

    from portal_cli import main, output

    rows = [
        {
            "id": 1234,
            "project_code": "ABC-DEF-001",
            "facility": "baskerville",
            "status": "exhausted",
            "gpu_hours": 1000.0,
            "gpu_hours_used": 1000.0,
            "gpu_hours_remaining": 0.0,
            "end_date": "2026-06-30",
            "runs_out_on": {"gpu_hours": None, "budget": None},
        },
        {
            "id": 12,
            "project_code": "ABC-DEF-002",
            "facility": "baskerville",
            "status": "active",
            "gpu_hours": 100.0,
            "gpu_hours_used": 40.0,
            "gpu_hours_remaining": 60.0,
            "end_date": "2026-06-30",
            "runs_out_on": {"gpu_hours": "2026-06-01", "budget": "2026-05-20"},
        },
    ]

    class Api:
        def all_pages(self, path):
            assert path == "allocations/"
            return rows

    monkeypatch.setattr(main, "client", Api)
    monkeypatch.setattr(output, "out", Console(soft_wrap=False, width=80, no_color=True))
    main.allocations(as_json=False)
    lines = capsys.readouterr().out.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= 80
    header = next(line for line in lines if "runs out" in line)
    assert header.split()[-2:] == ["runs", "out"]
    assert lines[0].strip() == "Allocations (GPU-hours)"  # one unit: the title says it
    by_id = {
        line.split()[0]: line.split() for line in lines if line.split()[:1] in (["1234"], ["12"])
    }
    assert by_id["1234"][-1] == "-" and by_id["12"][-1] == "2026-05-20"  # the earlier date
    assert by_id["12"][4:7] == ["100", "40.00", "60.00"]


def test_a_page_of_allocations_reads_the_same_burn_as_a_query_of_rows(project, facility):
    """`burns_of` (loaded allocations, one grouped query) and `with_burn` (subqueries of a row
    query, the alerts' pass) give every allocation the same sums: use inside the 7-day window,
    only inside the 30-day one, outside both, today's (outside: a window ends at midnight), and
    none at all."""
    from allocations.burn import burn_of, burns_of, with_burn
    from allocations.models import Allocation

    today = timezone.localdate()
    made = []
    for days in ((1, 3), (10, 29), (31, 40), (0,), ()):
        allocation = AllocationFactory(
            project=project, facility=facility, start_date=today - dt.timedelta(days=60)
        )
        for n, days_ago in enumerate(days):
            use(allocation, days_ago=days_ago, hours=1.5 + n, cost="0.75", n=n)
        made.append(allocation.pk)
    loaded = list(Allocation.objects.filter(pk__in=made))
    together = burns_of(loaded)
    each = {a.pk: burn_of(a) for a in with_burn(Allocation.objects.filter(pk__in=made))}
    assert together == each
    rates = {pk: (burn.rate_7d, burn.rate_30d) for pk, burn in together.items()}
    per_day = {pk: [r.gpu_hours_per_day for r in rate] for pk, rate in rates.items()}
    assert per_day[made[0]][0] > 0 and per_day[made[1]][0] == 0  # 7 days
    assert per_day[made[1]][1] > 0 and per_day[made[2]][1] == 0  # 30 days
    assert per_day[made[3]] == per_day[made[4]] == [0, 0]  # today's use is in no window yet
