"""The notebooks API without a hub: opening (201 with the reservation), per-field 400s, 404 for
others' allocations and sessions, 409 with the shortfall and from a stopped session, the URL
only for its owner, the list scoped and filtered, and every operation in the OpenAPI document."""

from __future__ import annotations

import pytest

from launcher.notebooks.models import NotebookSession
from tests.factories import AllocationFactory
from tests.notebooks.fixtures import colleague, nb_allocation, nb_dirs, nb_facility, set_state  # noqa: F401  (fixtures)

pytestmark = pytest.mark.django_db


def open_(api, user, **body):
    return api.as_user(user).post("/api/v1/notebooks/", body, format="json")


def test_a_member_opens_a_notebook_and_sees_its_reservation(api, researcher, nb_allocation):
    response = open_(api, researcher, allocation=nb_allocation.pk, gpus=2, hours=1.5)
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["state"] == "starting" and body["gpus"] == 2 and body["hours"] == 1.5
    assert body["reserved_gpu_seconds"] == 10800 and body["gpu_seconds"] == 0
    assert body["url"].endswith(f"/user/rosalind/nb-{body['id']}/lab")
    assert body["idle_limit_minutes"] == 30 and body["owner"] == "rosalind"
    ledger = api.as_user(researcher).get(f"/api/v1/allocations/{nb_allocation.pk}/").json()
    assert ledger["gpu_seconds_reserved"] == 10800


def test_bad_input_is_a_per_field_400(api, researcher, nb_allocation):
    response = open_(api, researcher, allocation=nb_allocation.pk, gpus=3, hours=0)
    assert response.status_code == 400
    assert set(response.json()) == {"hours"}  # the serializer's bound first
    response = open_(api, researcher, allocation=nb_allocation.pk, gpus=3, hours=1)
    assert response.status_code == 400 and set(response.json()) == {"gpus"}
    response = open_(api, researcher, allocation="x", gpus="many")
    assert response.status_code == 400
    assert set(response.json()) == {"allocation", "gpus", "hours"}
    assert not NotebookSession.objects.exists()


def test_others_allocations_and_sessions_are_404(api, researcher, outsider, nb_allocation):
    assert open_(api, outsider, allocation=nb_allocation.pk, gpus=1, hours=1).status_code == 404
    session = open_(api, researcher, allocation=nb_allocation.pk, gpus=1, hours=1).json()
    for path in (f"/api/v1/notebooks/{session['id']}/", "/api/v1/notebooks/99999/"):
        assert api.as_user(outsider).get(path).status_code == 404
    assert api.as_user(outsider).post(f"/api/v1/notebooks/{session['id']}/stop/").status_code == 404
    assert api.as_user(outsider).get("/api/v1/notebooks/").json()["results"] == []


def test_a_session_that_does_not_fit_is_a_409_with_the_shortfall(api, researcher, nb_allocation):
    assert open_(api, researcher, allocation=nb_allocation.pk, gpus=2, hours=4).status_code == 201
    response = open_(api, researcher, allocation=nb_allocation.pk, gpus=2, hours=3)
    assert response.status_code == 409
    body = response.json()
    assert body["shortfall_gpu_hours"] == 4.0 and body["remaining_gpu_hours"] == 2.0
    assert "4 GPU-hours short" in body["detail"]


def test_only_the_owner_sees_the_url_and_stops_it_once(api, researcher, colleague, nb_allocation):
    session = open_(api, researcher, allocation=nb_allocation.pk, gpus=1, hours=1).json()
    theirs = api.as_user(colleague).get(f"/api/v1/notebooks/{session['id']}/").json()
    assert theirs["url"] is None and theirs["state"] == "starting"
    stop = f"/api/v1/notebooks/{session['id']}/stop/"
    assert api.as_user(colleague).post(stop).status_code == 403
    response = api.as_user(researcher).post(stop)
    assert response.status_code == 200 and response.json()["state"] == "stopping"
    set_state(NotebookSession.objects.get(pk=session["id"]), "stopped")
    response = api.as_user(researcher).post(stop)
    assert response.status_code == 409 and response.json()["from"] == "stopped"


def test_the_list_is_filtered_by_allocation_and_state(api, researcher, nb_allocation, project):
    other = AllocationFactory(
        project=project, facility=nb_allocation.facility, node_type=nb_allocation.node_type
    )
    a = open_(api, researcher, allocation=nb_allocation.pk, gpus=1, hours=1).json()
    b = open_(api, researcher, allocation=other.pk, gpus=1, hours=1).json()
    listed = api.as_user(researcher).get(f"/api/v1/notebooks/?allocation={other.pk}").json()
    assert [s["id"] for s in listed["results"]] == [b["id"]]
    listed = api.as_user(researcher).get("/api/v1/notebooks/?state=starting").json()
    assert {s["id"] for s in listed["results"]} == {a["id"], b["id"]}


def test_the_operations_are_in_the_openapi_document(api, researcher):
    schema = api.as_user(researcher).get("/api/v1/schema/?format=json").json()
    paths = schema["paths"]
    assert set(paths["/api/v1/notebooks/"]) >= {"get", "post"}
    assert "get" in paths["/api/v1/notebooks/{id}/"]
    stop = paths["/api/v1/notebooks/{id}/stop/"]["post"]
    assert {"200", "403", "404", "409"} <= set(stop["responses"])
    assert {"201", "400", "404", "409"} <= set(paths["/api/v1/notebooks/"]["post"]["responses"])
    assert set(schema["components"]["schemas"]["NotebookInputRequest"]["required"]) == {
        "allocation",
        "gpus",
        "hours",
    }
