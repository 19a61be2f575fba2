"""`portal jobs launch --allocation auto` (docs/placement.md, docs/cli.md): with --estimate it
prints the ranking and launches nothing; without, the job goes to the first-ranked allocation
and the command says where and why. A word that is neither an id nor auto is a usage error."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.utils import timezone

from allocations.models import Allocation
from launcher.models import Job
from portal.tokens.services import account_token_create
from tests.cli.conftest import cli  # noqa: F401  (fixture)
from tests.factories import FacilityFactory, open_job

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]


def allocate(project, slug: str, rate: str, slots: int) -> Allocation:
    facility = FacilityFactory(
        slug=slug, backend="local", gpu_hour_rate=Decimal(rate), backend_settings={"slots": slots}
    )
    today = timezone.localdate()
    return Allocation.objects.create(
        project=project, facility=facility, gpu_hours=Decimal(20), start_date=today,
        end_date=today + dt.timedelta(days=30), status="active", account_name=f"{slug}-a",
    )  # fmt: skip


def test_auto_shows_the_ranking_and_launches_on_the_first(
    cli,
    project,
    researcher,
    settings,
    tmp_path,  # noqa: F811
):
    settings.LOCAL_JOBS_DIR = tmp_path / "local-jobs"
    dear = allocate(project, "dear-local", "2.00", 2)
    cheap = allocate(project, "cheap-local", "0.50", 1)
    open_job(
        allocation=cheap, created_by=researcher, token="portal-job-busy", state="running",
        wall_time_minutes=25, started_at=timezone.now(), estimate_gpu_hours=Decimal("0.5"),
    )  # fmt: skip
    _, key = account_token_create(user=researcher)
    env = {"PORTAL_URL": cli.url, "PORTAL_TOKEN": key}
    args = ("jobs", "launch", "--allocation", "auto", "--wall-time", "30", "--epochs", "1")

    ranking = cli(*args, "--estimate", **env)

    assert ranking.code == 0, ranking.err
    assert "Placement" in ranking.out and "placed on dear-local" in ranking.out
    assert ranking.out.index("dear-local") < ranking.out.index("cheap-local")
    assert not Job.objects.exclude(token="portal-job-busy").exists()

    launched = cli(*args, "--json", **env)

    assert launched.code == 0, launched.err
    assert launched.json()["allocation"] == dear.pk
    assert launched.json()["placement"]["chosen"] == dear.pk

    bad = cli("jobs", "launch", "--allocation", "somewhere", **env)
    assert bad.code == 2 and "auto" in bad.err
