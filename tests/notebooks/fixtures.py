"""People and places for the notebook tests: a local facility with 2-GPU nodes whose project
storage and session folders are the test's own, an active 10 GPU-hour allocation on it, and
`finish_run`, which writes the record the hub's local supervisor writes (record.json)."""

from __future__ import annotations

import datetime as dt
import json
import threading
from decimal import Decimal
from pathlib import Path

import pytest
from django.db import connection
from django.utils import timezone

from allocations.models import Allocation, ProjectMembership
from launcher.notebooks import sync
from launcher.notebooks.models import NotebookSession
from tests.factories import AllocationFactory, FacilityFactory, NodeTypeFactory, UserFactory


@pytest.fixture
def nb_dirs(member_tmp, settings):
    tmp_path = member_tmp
    settings.LOCAL_HOMES_DIR = tmp_path / "homes"
    settings.NOTEBOOKS_DIR = tmp_path / "notebooks"
    # The local backend's slot claims are the test's own: a stale claim of another test's
    # session of the same id would take a slot (services.notebook_start checks them).
    settings.LOCAL_JOBS_DIR = tmp_path / "local-jobs"
    return tmp_path


@pytest.fixture
def nb_facility(db, nb_dirs):
    facility = FacilityFactory(
        slug="nb-local",
        name="Local notebooks",
        kind="local",
        backend="local",
        gpu_hour_rate=Decimal("2.00"),
        backend_settings={"storage_root": str(nb_dirs / "project-data")},
        notebook_idle_minutes=30,
    )
    NodeTypeFactory(facility=facility, name="L-GPU-2", accelerators_per_node=2)
    return facility


@pytest.fixture
def nb_allocation(project, nb_facility):
    return AllocationFactory(
        project=project,
        facility=nb_facility,
        gpu_hours=Decimal(10),
        node_type=nb_facility.node_types.get(),
    )


@pytest.fixture
def colleague(project):
    """Another member of the project: sees the sessions, cannot open or stop others'."""
    user = UserFactory(username="carol", first_name="Carol")
    ProjectMembership.objects.create(project=project, user=user, role="member")
    return user


@pytest.fixture
def hub_sync(hub, settings):
    """The test's hub as the portal's, and a thread doing the beat task's sync every half
    second while the test waits (needs the `hub` fixture: tests/notebooks/conftest.py)."""
    settings.JUPYTERHUB_URL = hub.url
    settings.JUPYTERHUB_API_TOKEN = hub.api_token
    stop = threading.Event()

    def loop():
        try:
            while not stop.wait(0.5):
                sync.notebook_sync_all()
        finally:
            connection.close()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    yield hub
    stop.set()
    thread.join(timeout=30)


def finish_run(session: NotebookSession, *, seconds: float, reason: str = "stopped") -> dict:
    """Write `<run_dir>/record.json` as the local supervisor does at the end of a run."""
    run_dir = Path(session.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    started = timezone.now().timestamp() - seconds - 5
    record = {
        "pid": 4242,
        "started": started,
        "ended": started + seconds,
        "exit": 0,
        "reason": reason,
    }
    (run_dir / "record.json").write_text(json.dumps(record))
    return record


def set_state(session: NotebookSession, state: str, **fields) -> NotebookSession:
    """Put a session where the hub's view would have moved it (for tests of later steps)."""
    NotebookSession.objects.filter(pk=session.pk).update(state=state, **fields)
    session.refresh_from_db()
    return session


def ago(**kwargs) -> dt.datetime:
    return timezone.now() - dt.timedelta(**kwargs)


__all__ = [
    "Allocation",
    "ago",
    "colleague",
    "finish_run",
    "hub_sync",
    "nb_allocation",
    "nb_dirs",
    "nb_facility",
    "set_state",
]
