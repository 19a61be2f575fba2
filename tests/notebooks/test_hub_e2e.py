"""Notebook sessions end to end through a real JupyterHub (tests/notebooks/hubfixture.py): the
API opens a session, the hub spawns the local server, the sync sees it running, the API stops
it, and the allocation is charged exactly what the supervisor's record.json says; a suspended
allocation stops its running session. Tasks run in-process after each commit (eager)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from allocations.ledger import Figures, ledger_recomputed, ledger_stored
from allocations.models import UsageRecord
from allocations.services import allocation_suspend
from launcher.notebooks import services, sync
from launcher.notebooks.models import NotebookSession
from tests.notebooks.fixtures import nb_allocation, nb_dirs, nb_facility  # noqa: F401  (fixtures)
from tests.notebooks.hubfixture import WAIT
from tests.waiting import wait_for

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def portal_hub(hub, settings):
    settings.JUPYTERHUB_URL = hub.url
    settings.JUPYTERHUB_API_TOKEN = hub.api_token
    settings.CELERY_TASK_ALWAYS_EAGER = True
    return hub


def synced_until(session_id: int, check, what: str) -> NotebookSession:
    """Run the beat task's pass until the session satisfies `check`."""

    def passed():
        sync.notebook_sync_all()
        session = NotebookSession.objects.get(pk=session_id)
        return session if check(session) else None

    return wait_for(passed, timeout=WAIT, every=0.2, what=what)


def record_of(session: NotebookSession) -> dict:
    return json.loads((Path(session.run_dir) / "record.json").read_text())


def ledger_agrees(allocation) -> Figures:
    stored = ledger_stored(allocation_ids=[allocation.pk])[allocation.pk]
    assert stored == ledger_recomputed(allocation_ids=[allocation.pk]).get(allocation.pk, Figures())
    return stored


def test_open_run_stop_and_charge_the_records_exact_seconds(
    api, portal_hub, researcher, nb_allocation
):
    client = api.as_user(researcher)
    response = client.post(
        "/api/v1/notebooks/", {"allocation": nb_allocation.pk, "gpus": 2, "hours": 1}, format="json"
    )
    assert response.status_code == 201, response.json()
    pk = response.json()["id"]
    assert ledger_agrees(nb_allocation).gpu_seconds_reserved == 7200

    session = synced_until(pk, lambda s: s.state == "running", "the session running")
    server = portal_hub.server(researcher.username, f"nb-{pk}")
    assert server["ready"] and server["url"] == f"/user/{researcher.username}/nb-{pk}/"
    assert session.url == f"{portal_hub.url}/user/{researcher.username}/nb-{pk}/lab"
    assert (Path(session.workdir) / "datasets").is_dir()
    assert record_of(session)["ended"] is None

    stopped = client.post(f"/api/v1/notebooks/{pk}/stop/")
    assert stopped.status_code == 200 and stopped.json()["state"] in ("stopping", "stopped")
    session = synced_until(pk, lambda s: s.charged_at is not None, "the charge")
    record = record_of(session)
    exact = math.ceil(record["ended"] - record["started"]) * 2  # wall seconds x 2 GPUs
    assert session.state == "stopped" and session.gpu_seconds == exact
    assert session.reason == "stopped by its owner" and record["reason"] == "stopped"
    charge = UsageRecord.objects.get(allocation=nb_allocation)
    assert (charge.source, charge.gpu_seconds) == ("local", exact)
    figures = ledger_agrees(nb_allocation)
    assert (figures.gpu_seconds_used, figures.gpu_seconds_reserved) == (exact, 0)
    body = client.get(f"/api/v1/notebooks/{pk}/").json()
    assert body["gpu_seconds"] == exact and body["charged"] and body["url"] is None
    assert portal_hub.server(researcher.username, f"nb-{pk}") is None
    # The beat task again: nothing charged twice.
    sync.notebook_sync_all()
    assert UsageRecord.objects.filter(allocation=nb_allocation).count() == 1


def test_suspending_the_allocation_stops_its_running_session(
    api, portal_hub, researcher, admin, nb_allocation
):
    response = api.as_user(researcher).post(
        "/api/v1/notebooks/", {"allocation": nb_allocation.pk, "gpus": 1, "hours": 2}, format="json"
    )
    pk = response.json()["id"]
    synced_until(pk, lambda s: s.state == "running", "the session running")

    allocation_suspend(allocation=nb_allocation, by=admin, comment="audit")
    session = synced_until(pk, lambda s: s.charged_at is not None, "the stop and the charge")
    assert session.reason == "stopped: the allocation is suspended"
    record = record_of(session)
    assert session.gpu_seconds == math.ceil(record["ended"] - record["started"])
    assert portal_hub.server(researcher.username, f"nb-{pk}") is None
    assert ledger_agrees(nb_allocation).gpu_seconds_reserved == 0


def test_a_server_whose_session_is_over_is_stopped_by_the_sync(
    portal_hub, researcher, nb_allocation
):
    session = services.notebook_start(
        actor=researcher, allocation_id=nb_allocation.pk, gpus=1, hours=1
    )  # the hub starts it after the commit
    name = f"nb-{session.pk}"
    portal_hub.wait_ready(researcher.username, name)
    # Its session is over in the portal while the hub still runs it (a start that raced a stop).
    NotebookSession.objects.filter(pk=session.pk).update(state="failed", reason="raced a stop")
    assert sync.notebook_sync_all() == {"reaped": 1}
    wait_for(
        lambda: portal_hub.server(researcher.username, name) is None,
        timeout=WAIT,
        every=0.2,
        what="the orphan gone",
    )
    assert sync.notebook_sync_all() == {}
