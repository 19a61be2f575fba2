"""A local notebook's charge reads as its page shows it (issue 39: Started 23:45:29, Stopped
23:45:41, "Charged 13 CPU-seconds (13 s of wall time)"): the record's period is whole seconds,
from the second the run started in, for the wall seconds charged, so Stopped - Started as
shown to the second is the charge, and the period is the run's to within a second."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pytest
from django.template.defaultfilters import date as date_filter

from launcher.backends.registry import backend_for
from launcher.notebooks.models import NotebookSession
from tests.factories import AllocationFactory, FacilityFactory

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("started", "ended", "charged"),
    [(1_000.6, 1_012.9, 13), (1_000.1, 1_012.0, 12), (1_000.0, 1_012.0, 12), (5.99, 6.01, 1)],
)
def test_the_period_charged_is_whole_seconds_holding_the_run(
    tmp_path, researcher, project, started, ended, charged
):
    allocation = AllocationFactory(
        project=project, facility=FacilityFactory(slug="nb-seconds", backend="local")
    )
    run = tmp_path / "run"
    run.mkdir()
    (run / "record.json").write_text(json.dumps({"started": started, "ended": ended}))
    session = NotebookSession.objects.create(
        allocation=allocation,
        user=researcher,
        gpus=1,
        hours=Decimal(1),
        state="stopped",
        run_dir=str(run),
        reserved_gpu_seconds=3600,
    )

    usage = backend_for(allocation.facility).notebook_usage(session=session)

    assert usage.wall_seconds == usage.gpu_seconds == charged
    shown = [date_filter(t, "Y-m-d H:i:s") for t in (usage.started, usage.ended)]
    seconds = [dt.datetime.fromisoformat(s).timestamp() for s in shown]
    assert seconds[1] - seconds[0] == charged  # as the page shows them, to the second
    assert started - 1 < usage.started.timestamp() <= started
    assert ended - 1 < usage.ended.timestamp() < ended + 1
