"""Opening, refusing, stopping and charging notebook sessions through the services, against
the real PostgreSQL ledger (the hub is not involved here: the start and stop tasks run after
the commit, which these transactional tests never reach; test_hub_e2e.py drives a real hub)."""

from __future__ import annotations

import math
from decimal import Decimal
from pathlib import Path

import pytest
from django.test import Client

from allocations.ledger import Figures, ledger_recomputed, ledger_stored
from allocations.models import Dataset, Event, UsageRecord
from allocations.transitions import InvalidTransition
from core.errors import Forbidden, Invalid
from launcher.backends.contract import NotebookUsage
from launcher.backends.registry import backend_for
from launcher.notebooks import services, sync
from launcher.notebooks.hubapi import ServerView
from launcher.notebooks.models import NotebookSession
from launcher.selectors import NotVisible
from tests.factories import AllocationFactory, FacilityFactory
from tests.notebooks.fixtures import (  # noqa: F401  (fixtures)
    ago,
    colleague,
    finish_run,
    nb_allocation,
    nb_dirs,
    nb_facility,
    set_state,
)

pytestmark = pytest.mark.django_db
S = NotebookSession.State


def columns_agree(allocation) -> Figures:
    stored = ledger_stored(allocation_ids=[allocation.pk])[allocation.pk]
    assert stored == ledger_recomputed(allocation_ids=[allocation.pk]).get(allocation.pk, Figures())
    return stored


def test_a_member_opens_a_session_that_reserves_gpus_times_hours(researcher, nb_allocation):
    session = services.notebook_start(
        actor=researcher, allocation_id=nb_allocation.pk, gpus=2, hours="1.5"
    )
    assert session.state == S.STARTING and session.user == researcher
    assert session.reserved_gpu_seconds == 2 * 5400
    assert session.reserved_cost == Decimal("6.0000")  # 3 GPU-hours at 2.00
    assert session.server_name == f"nb-{session.pk}"
    assert session.url.endswith(f"/user/rosalind/nb-{session.pk}/lab")
    figures = columns_agree(nb_allocation)
    assert figures.gpu_seconds_reserved == 10800 and figures.cost_reserved == Decimal("6.0000")
    assert Event.objects.filter(object_id=session.pk, to_state="starting").exists()


def test_a_session_that_does_not_fit_is_refused_with_the_shortfall(researcher, nb_allocation):
    services.notebook_start(actor=researcher, allocation_id=nb_allocation.pk, gpus=2, hours=4)
    with pytest.raises(services.NotebookConflict) as refused:
        services.notebook_start(actor=researcher, allocation_id=nb_allocation.pk, gpus=2, hours=3)
    assert refused.value.status == 409
    assert refused.value.data["shortfall_gpu_hours"] == 4.0  # needs 6, 2 left
    assert refused.value.data["remaining_gpu_hours"] == 2.0
    assert "4 GPU-hours short" in str(refused.value)
    assert NotebookSession.objects.count() == 1
    assert columns_agree(nb_allocation).gpu_seconds_reserved == 8 * 3600


def test_others_allocations_are_not_found_and_non_members_are_refused(
    outsider, reviewer, admin, nb_allocation
):
    with pytest.raises(NotVisible):
        services.notebook_start(actor=outsider, allocation_id=nb_allocation.pk, gpus=1, hours=1)
    with pytest.raises(NotVisible):
        services.notebook_start(actor=outsider, allocation_id=987654, gpus=1, hours=1)
    for who in (reviewer, admin):  # they see the allocation but are not in the project
        with pytest.raises(Forbidden):
            services.notebook_start(actor=who, allocation_id=nb_allocation.pk, gpus=1, hours=1)
    assert not NotebookSession.objects.exists()


@pytest.mark.parametrize(
    "gpus, hours, fields",
    [
        (3, 1, {"gpus"}),
        (0, 1, {"gpus"}),
        ("two", 1, {"gpus"}),
        (1, 0, {"hours"}),
        (1, 13, {"hours"}),
        (1, "1.234", {"hours"}),
        (1, "soon", {"hours"}),
        (9, -1, {"gpus", "hours"}),
    ],
)
def test_bad_gpus_and_hours_are_refused_per_field(researcher, nb_allocation, gpus, hours, fields):
    with pytest.raises(Invalid) as refused:
        services.notebook_start(
            actor=researcher, allocation_id=nb_allocation.pk, gpus=gpus, hours=hours
        )
    assert set(refused.value.field_errors) == fields
    assert not NotebookSession.objects.exists()


def test_an_inactive_allocation_or_a_facility_without_notebooks_is_a_conflict(
    researcher, project, nb_allocation
):
    nb_allocation.status = "suspended"
    nb_allocation.save()
    with pytest.raises(services.NotebookConflict, match="suspended"):
        services.notebook_start(actor=researcher, allocation_id=nb_allocation.pk, gpus=1, hours=1)
    manual = FacilityFactory(slug="jade", name="JADE2", backend="slurm")  # not configured
    elsewhere = AllocationFactory(project=project, facility=manual)
    with pytest.raises(services.NotebookConflict, match="JADE2 cannot run notebook sessions"):
        services.notebook_start(actor=researcher, allocation_id=elsewhere.pk, gpus=1, hours=1)


def test_a_stopped_session_is_charged_its_records_exact_seconds_once(researcher, nb_allocation):
    session = services.notebook_start(
        actor=researcher, allocation_id=nb_allocation.pk, gpus=2, hours=1
    )
    options = backend_for(nb_allocation.facility).notebook_options(
        allocation=nb_allocation, session=session
    )
    session = set_state(
        session,
        S.RUNNING,
        run_dir=options["run_dir"],
        started_at=ago(seconds=40),
        spawned_at=ago(seconds=45),
    )
    finish_run(session, seconds=37.25)
    assert sync.notebook_observe(session=session, view=None) == "charged"
    session.refresh_from_db()
    # ceil(37.25) = 38 s of wall time x 2 GPUs, as the page states it
    assert session.state == S.STOPPED and session.gpu_seconds == 76
    assert session.wall_seconds == 38 == math.ceil(37.25)
    record = UsageRecord.objects.get()
    # The session's start and stop are the record's: whole seconds, they differ by the wall
    # time charged.
    assert (session.started_at, session.stopped_at) == (record.period_start, record.period_end)
    ran = (session.stopped_at - session.started_at).total_seconds()
    assert ran == session.wall_seconds and session.started_at.microsecond == 0
    assert (record.source, record.gpu_seconds) == ("local", 76)
    assert (
        record.external_id == f"notebook/{session.pk}/{nb_allocation.facility_id}/nb-{session.pk}"
    )
    assert record.cost == Decimal("0.0422")  # 76 GPU-seconds at 2.00 a GPU-hour
    figures = columns_agree(nb_allocation)
    assert (figures.gpu_seconds_used, figures.gpu_seconds_reserved) == (76, 0)
    # The beat task sees it again: nothing more is charged.
    assert sync.notebook_charge(session=session) == S.STOPPED
    assert sync.notebook_sync_all() == {}
    assert UsageRecord.objects.count() == 1 and columns_agree(nb_allocation).gpu_seconds_used == 76


def test_a_session_that_left_no_record_fails_and_releases_its_reservation(
    researcher, nb_allocation, settings
):
    settings.NOTEBOOK_RECORD_GRACE_SECONDS = 60
    session = services.notebook_start(
        actor=researcher, allocation_id=nb_allocation.pk, gpus=1, hours=2
    )
    session = set_state(
        session,
        S.STOPPED,
        started_at=ago(minutes=5),
        stopped_at=ago(seconds=30),
        spawned_at=ago(minutes=6),
        run_dir=str(Path(settings.NOTEBOOKS_DIR) / "none"),
    )
    assert sync.notebook_charge(session=session) == "waiting"
    assert columns_agree(nb_allocation).gpu_seconds_reserved == 7200
    session = set_state(session, S.STOPPED, stopped_at=ago(seconds=61))
    assert sync.notebook_charge(session=session) == "failed"
    session.refresh_from_db()
    assert session.state == S.FAILED and "left no record" in session.reason
    assert columns_agree(nb_allocation) == Figures()


def test_only_the_owner_or_staff_stops_a_session_and_never_twice(
    researcher, colleague, outsider, admin, nb_allocation
):
    session = services.notebook_start(
        actor=researcher, allocation_id=nb_allocation.pk, gpus=1, hours=1
    )
    with pytest.raises(NotVisible):
        services.notebook_stop(actor=outsider, session_id=session.pk)
    with pytest.raises(Forbidden):
        services.notebook_stop(actor=colleague, session_id=session.pk)
    stopped = services.notebook_stop(actor=researcher, session_id=session.pk)
    assert stopped.state == S.STOPPING and stopped.reason == "stopped by its owner"
    assert services.notebook_stop(actor=admin, session_id=session.pk).state == S.STOPPING
    set_state(session, S.STOPPED)
    with pytest.raises(InvalidTransition) as refused:
        services.notebook_stop(actor=researcher, session_id=session.pk)
    assert refused.value.status == 409


def view(session, **fields) -> ServerView:
    values = dict(
        name=session.server_name,
        ready=True,
        pending="",
        url="",
        started=ago(minutes=1),
        last_activity=ago(seconds=10),
        state={},
    )
    return ServerView(**{**values, **fields})


def test_the_sync_follows_the_hub_and_enforces_hours_idle_and_the_allocation(
    researcher, nb_allocation
):
    def start():
        return services.notebook_start(
            actor=researcher, allocation_id=nb_allocation.pk, gpus=1, hours="0.5"
        )

    ready = set_state(start(), S.STARTING, spawned_at=ago(seconds=5))
    assert sync.notebook_observe(session=ready, view=view(ready)) == S.RUNNING
    assert NotebookSession.objects.get(pk=ready.pk).state == S.RUNNING

    late = set_state(start(), S.RUNNING, started_at=ago(minutes=31), spawned_at=ago(minutes=31))
    assert (
        sync.notebook_observe(session=late, view=view(late, started=ago(minutes=31))) == "stopping"
    )
    assert NotebookSession.objects.get(pk=late.pk).reason == "stopped at its limit of 0.5 h"

    idle = set_state(start(), S.RUNNING, started_at=ago(minutes=20), spawned_at=ago(minutes=20))
    nb_allocation.facility.notebook_idle_minutes = 15
    nb_allocation.facility.save()
    idle.allocation.facility.notebook_idle_minutes = 15
    assert (
        sync.notebook_observe(session=idle, view=view(idle, last_activity=ago(minutes=16)))
        == "stopping"
    )
    assert "idle for 15 minutes" in NotebookSession.objects.get(pk=idle.pk).reason

    pending = start()  # the spawn task has not reached the hub: not judged gone
    assert sync.notebook_observe(session=pending, view=None) == "waiting"

    # Queued on a busy cluster: the session says why it waits, in the scheduler's words, and
    # the words go once it stops waiting.
    queued = set_state(start(), S.STARTING, spawned_at=ago(seconds=5))
    waits = {"child_state": {"job_state": "PENDING", "reason": "Resources"}}
    assert (
        sync.notebook_observe(
            session=queued, view=view(queued, ready=False, pending="spawn", state=waits)
        )
        == S.STARTING
    )
    assert (
        NotebookSession.objects.get(pk=queued.pk).reason == "waiting in the Slurm queue: Resources"
    )
    sync.notebook_observe(
        session=queued,
        view=view(
            queued,
            ready=False,
            pending="spawn",
            state={"child_state": {"job_state": "RUNNING", "reason": ""}},
        ),
    )
    assert NotebookSession.objects.get(pk=queued.pk).reason == ""


def test_a_suspended_allocation_stops_its_live_sessions(researcher, nb_allocation):
    running = set_state(
        services.notebook_start(actor=researcher, allocation_id=nb_allocation.pk, gpus=1, hours=1),
        S.RUNNING,
    )
    nb_allocation.status = "suspended"
    nb_allocation.save()
    assert sync.notebook_stop_allocation(allocation_id=nb_allocation.pk) == 1
    running.refresh_from_db()
    assert running.state == S.STOPPING and running.reason == "stopped: the allocation is suspended"


def _started_with_options(researcher, allocation, *, gpus: int):
    """A session opened by `researcher` and the local backend's options for it."""
    session = services.notebook_start(
        actor=researcher, allocation_id=allocation.pk, gpus=gpus, hours=1
    )
    return session, backend_for(allocation.facility).notebook_options(
        allocation=allocation, session=session
    )


def test_local_options_give_a_lasting_workdir_and_the_confined_datasets(
    researcher, nb_allocation, nb_dirs, project
):
    folder = nb_dirs / "project-data" / project.code
    (folder / "ct" / "scans").mkdir(parents=True)
    (nb_dirs / "elsewhere").mkdir()
    (folder / "escape").symlink_to(nb_dirs / "elsewhere")
    Dataset.objects.create(
        project=project, name="ct-scans", location="ct/scans", modality="ct", sensitivity="public"
    )
    Dataset.objects.create(
        project=project, name="escape", location="escape", modality="ct", sensitivity="public"
    )
    session, options = _started_with_options(researcher, nb_allocation, gpus=2)
    assert options["workdir"] == str(folder / "notebooks" / "rosalind")
    assert Path(options["workdir"]).is_dir() and Path(options["run_dir"]).is_dir()
    assert options["datasets"] == {"ct-scans": str(folder / "ct" / "scans")}
    assert "outside the project's folder" in options["datasets_left_out"]["escape"]
    assert options["cuda_visible_devices"] == "0,1"
    sent = services.user_options(session, "local", options)
    assert sent["backend"] == "local" and sent["hours"] == 1.0 and sent["gpus"] == 2
    assert sent["datasets"] == options["datasets"] and sent["backend_options"] == options


def test_a_dataset_of_a_tier_the_facility_refuses_is_left_out_of_a_session(
    researcher, nb_allocation, nb_dirs, project
):
    """A session reads only what a job on the facility could (allocations.policy
    dataset_refusal): the facility takes public and internal data, not special."""
    folder = nb_dirs / "project-data" / project.code
    (folder / "wards").mkdir(parents=True)
    Dataset.objects.create(
        project=project, name="wards", location="wards", modality="ct", sensitivity="special"
    )
    _, options = _started_with_options(researcher, nb_allocation, gpus=1)
    assert options["datasets"] == {}
    assert "does not accept" in options["datasets_left_out"]["wards"]
    assert "it accepts: public, internal" in options["datasets_left_out"]["wards"]


def test_the_local_record_is_read_exactly(researcher, nb_allocation):
    session = services.notebook_start(
        actor=researcher, allocation_id=nb_allocation.pk, gpus=2, hours=1
    )
    backend = backend_for(nb_allocation.facility)
    session.run_dir = backend.notebook_options(allocation=nb_allocation, session=session)["run_dir"]
    assert backend.notebook_usage(session=session) is None
    record = finish_run(session, seconds=10.1)
    usage = backend.notebook_usage(session=session)
    assert isinstance(usage, NotebookUsage)
    # 11 s of wall time (ceil 10.1) x 2 GPUs, from the second the run started in
    assert (usage.gpu_seconds, usage.wall_seconds, usage.reason) == (22, 11, "stopped")
    assert usage.started.timestamp() == math.floor(record["started"])


def test_a_session_stopped_before_the_hub_started_it_fails_at_once(researcher, nb_allocation):
    session = services.notebook_start(
        actor=researcher, allocation_id=nb_allocation.pk, gpus=1, hours=1
    )
    services.notebook_stop(actor=researcher, session_id=session.pk)
    assert (
        sync.notebook_observe(session=NotebookSession.objects.get(pk=session.pk), view=None)
        == "failed"
    )
    session.refresh_from_db()
    assert session.state == S.FAILED and "before the hub started it" in session.reason
    assert columns_agree(nb_allocation) == Figures()


def test_a_session_is_refused_before_anything_is_made_while_every_slot_is_busy(
    researcher, nb_allocation
):
    """Issue 39, found on `make run`: with a job running on the 1-CPU workstation, "Open a
    notebook" made a session that failed at the hub ("all of ... GPUs are in use"). A job waits
    for a slot; a notebook cannot, so it is refused up front (409) and nothing is reserved."""
    from launcher.local import cells
    from launcher.local.places import facility_dir

    first = services.notebook_start(
        actor=researcher, allocation_id=nb_allocation.pk, gpus=2, hours=1
    )
    folder = facility_dir(nb_allocation.facility)
    folder.mkdir(parents=True, exist_ok=True)
    owner = f"nb-{first.pk}"
    assert cells.claim_devices(folder, owner=owner, need=2, slots=2, live={owner}) == "0,1"
    reserved = columns_agree(nb_allocation).gpu_seconds_reserved

    with pytest.raises(services.NotebookConflict) as refused:
        services.notebook_start(actor=researcher, allocation_id=nb_allocation.pk, gpus=1, hours=1)

    assert refused.value.status == 409
    assert str(refused.value) == (
        "Local notebooks runs 2 GPUs at a time and 2 are in use by running jobs or notebooks "
        "now: a notebook needs 1 free GPU when it opens (it does not wait in a queue as a job "
        "does). Open it when a run ends."
    )
    assert NotebookSession.objects.count() == 1
    assert columns_agree(nb_allocation).gpu_seconds_reserved == reserved
    # The allocation page says so above its button, before anyone presses it.
    client = Client()
    client.force_login(researcher)
    page = client.get(f"/allocations/{nb_allocation.pk}/").content.decode()
    assert 'id="notebook-busy"' in page and "2 are in use by running jobs or notebooks" in page

    set_state(first, S.STOPPED)  # the claim of a session no longer live is stale
    assert (
        services.notebook_start(
            actor=researcher, allocation_id=nb_allocation.pk, gpus=1, hours=1
        ).state
        == S.STARTING
    )
