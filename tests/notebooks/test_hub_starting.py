"""A hub still starting is waited out, not a failure (issue 39: a notebook opened in the first
seconds of `make run` failed for good with "the notebook hub answered 404 to POST
/users/researcher": the proxy answered before the hub had registered its routes).

The hub is an external service: these tests fake its HTTP answers at the transport (`responses`,
requests' own test double), the portal's code runs unchanged above it."""

from __future__ import annotations

import datetime as dt

import pytest
import requests
import responses
from django.utils import timezone

from allocations.models import Event
from launcher.notebooks import services, tasks
from launcher.notebooks.hubapi import HubClient, HubStarting
from launcher.notebooks.models import NotebookSession
from tests.notebooks.fixtures import nb_allocation, nb_dirs, nb_facility  # noqa: F401

pytestmark = pytest.mark.django_db
S = NotebookSession.State
HUB = "http://hub.test:8081"
# What configurable-http-proxy answers for a path no route covers yet: its HTML error page.
PROXY_404 = dict(
    status=404, body="<html><body>404: Not Found</body></html>", content_type="text/html"
)


@pytest.fixture
def hub(settings, nb_dirs):
    settings.JUPYTERHUB_URL, settings.JUPYTERHUB_API_TOKEN = HUB, "portal-token"
    settings.LOCAL_JOBS_DIR = nb_dirs / "local-jobs"  # the sessions' GPU claims: the test's own
    with responses.RequestsMock() as fake:
        yield fake


@pytest.fixture
def retries_run_eagerly(monkeypatch):
    """Eager tasks whose retries run at once, one after the other (as a worker runs them, less
    the countdown): the suite's eager runs otherwise raise the first Retry."""
    monkeypatch.setitem(tasks.spawn.app.conf, "task_eager_propagates", False)


@pytest.fixture
def session(researcher, nb_allocation, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):  # the spawn task runs in the test
        return services.notebook_start(
            actor=researcher, allocation_id=nb_allocation.pk, gpus=1, hours=1
        )


def servers_url(session: NotebookSession) -> str:
    return f"{HUB}/hub/api/users/{session.user.username}/servers/{session.server_name}"


def history(session: NotebookSession) -> list[str]:
    return list(
        Event.objects.filter(content_type__app_label="notebooks", object_id=session.pk)
        .order_by("created_at", "pk")
        .values_list("comment", flat=True)
    )


def test_a_proxy_404_is_a_hub_still_starting_and_never_taken_for_an_unknown_user(hub):
    hub.add(responses.POST, f"{HUB}/hub/api/users/ada/servers/nb-1", **PROXY_404)
    with pytest.raises(HubStarting) as starting:
        HubClient(HUB, "t").start_server("ada", "nb-1", {})
    assert not starting.value.permanent
    assert "still starting: its proxy answered 404 to POST" in starting.value.message
    # Only the POST was made: no attempt to create the user on a hub that is not there yet.
    assert [call.request.method for call in hub.calls] == ["POST"]


def test_the_hubs_own_404_still_means_an_unknown_user(hub):
    url = f"{HUB}/hub/api/users/ada"
    hub.add(responses.GET, url, json={"status": 404, "message": "No such user"}, status=404)
    assert HubClient(HUB, "t").servers("ada") is None
    hub.add(responses.GET, f"{HUB}/hub/api/users?state=active", status=502, body="Bad Gateway")
    with pytest.raises(HubStarting):
        HubClient(HUB, "t").active_servers()


def test_a_404_then_201_start_waits_for_the_hub_and_runs(hub, session, retries_run_eagerly):
    hub.add(responses.POST, servers_url(session), **PROXY_404)
    hub.add(responses.POST, servers_url(session), json={}, status=201)

    outcome = tasks.spawn.apply(args=[session.pk]).get()  # eager: the retry follows at once

    session.refresh_from_db()
    assert outcome == S.RUNNING and session.state == S.RUNNING
    assert len(hub.calls) == 2
    assert services.WAITING_FOR_HUB in history(session)
    assert history(session)[-1] == "JupyterLab is ready."


def test_other_transient_trouble_is_retried_on_its_own_count(hub, session, retries_run_eagerly):
    hub.add(responses.POST, servers_url(session), **PROXY_404)
    hub.add(responses.POST, servers_url(session), json={"message": "busy"}, status=500)
    hub.add(responses.POST, servers_url(session), json={}, status=201)

    outcome = tasks.spawn.apply(args=[session.pk]).get()

    assert outcome == S.RUNNING and len(hub.calls) == 3


def test_a_refused_connection_is_waited_for_too(hub, session):
    hub.add(
        responses.POST,
        servers_url(session),
        body=requests.ConnectionError("[Errno 111] Connection refused"),
    )
    with pytest.raises(HubStarting):
        services.notebook_spawn(session_id=session.pk)
    session.refresh_from_db()
    assert session.state == S.STARTING
    assert session.reason == "waiting for the notebook hub to start"
    assert history(session).count(services.WAITING_FOR_HUB) == 1


def test_a_hub_that_never_starts_fails_the_session_with_a_clear_message_after_the_bound(
    hub, session, settings
):
    settings.NOTEBOOK_HUB_START_WAIT_SECONDS = 90
    hub.add(responses.POST, servers_url(session), **PROXY_404)
    with pytest.raises(HubStarting):
        services.notebook_spawn(session_id=session.pk)  # the first try starts the clock
    with pytest.raises(HubStarting):
        services.notebook_spawn(session_id=session.pk)  # still within the 90 s
    Event.objects.filter(comment=services.WAITING_FOR_HUB, object_id=session.pk).update(
        created_at=timezone.now() - dt.timedelta(seconds=91)
    )

    outcome = services.notebook_spawn(session_id=session.pk)

    session.refresh_from_db()
    assert outcome == S.FAILED and session.state == S.FAILED
    assert session.reason.startswith(
        "could not start: the notebook hub did not start within 90 s (the notebook hub is still "
        "starting: its proxy answered 404 to POST "
    )
    assert session.reserved_now == 0
    assert history(session).count(services.WAITING_FOR_HUB) == 1


def test_a_hub_that_refuses_fails_at_once(hub, session):
    hub.add(
        responses.POST,
        servers_url(session),
        json={"status": 403, "message": "Action is not authorized"},
        status=403,
    )
    outcome = services.notebook_spawn(session_id=session.pk)
    session.refresh_from_db()
    assert outcome == S.FAILED
    assert session.reason == (
        "could not start: the notebook hub answered 403 to POST "
        f"/users/{session.user.username}/servers/{session.server_name}: Action is not authorized"
    )
    assert services.WAITING_FOR_HUB not in history(session)


def test_the_eager_backstop_ends_a_wait_that_never_ends(
    hub, session, settings, retries_run_eagerly
):
    settings.NOTEBOOK_HUB_START_WAIT_SECONDS = 3600
    hub.add(responses.POST, servers_url(session), **PROXY_404)

    outcome = tasks.spawn.apply(args=[session.pk]).get()

    session.refresh_from_db()
    assert outcome == S.FAILED and session.state == S.FAILED
    assert len(hub.calls) == tasks.HUB_WAIT_TRIES + 1
    assert "did not start within 3600 s" in session.reason
