"""Every write goes through a service with its audit event: a project PATCH is audited, and
the audit trail cannot be added to, edited or deleted in the admin, even by a superuser."""

from __future__ import annotations

import pytest
from django.test import Client

from allocations.models import Event, Project
from allocations.selectors import timeline
from allocations.transitions import record_event

pytestmark = pytest.mark.django_db


def test_a_project_patch_is_written_by_the_service_with_an_audit_event(api, pi, project):
    response = api.as_user(pi).patch(
        f"/api/v1/projects/{project.pk}/", {"title": "Chest CT triage"}, format="json"
    )

    assert response.status_code == 200, response.json()
    assert response.json()["title"] == "Chest CT triage"
    event = timeline(project).last()
    assert (event.actor, event.to_state) == (pi, "edited")
    assert "title: 'Chest imaging' -> 'Chest CT triage'" in event.comment


def test_a_member_who_does_not_manage_cannot_patch_and_nothing_is_recorded(
    api, researcher, project
):
    before = timeline(project).count()
    response = api.as_user(researcher).patch(
        f"/api/v1/projects/{project.pk}/", {"title": "Mine now"}, format="json"
    )

    assert response.status_code == 403
    assert Project.objects.get(pk=project.pk).title == "Chest imaging"
    assert timeline(project).count() == before


def test_an_outsider_gets_404_and_the_code_never_changes(api, pi, outsider, project):
    url = f"/api/v1/projects/{project.pk}/"
    assert api.as_user(outsider).patch(url, {"title": "x"}, format="json").status_code == 404
    response = api.as_user(pi).patch(url, {"code": "NEW-CODE-9"}, format="json")
    assert response.status_code == 400 and "code" in response.json()
    bad = api.as_user(pi).patch(url, {"pi_email": "not-an-address"}, format="json")
    assert bad.status_code == 400 and "pi_email" in bad.json()
    assert Project.objects.get(pk=project.pk).code == "ABC-DEF-001"
    assert not timeline(project).filter(to_state="edited").exists()


def test_audit_events_are_read_only_in_the_admin_even_for_a_superuser(admin, project):
    event = record_event(project, actor=admin, from_state="", to_state="created")
    client = Client()
    client.force_login(admin)

    assert client.get("/admin/allocations/event/add/").status_code == 403
    assert (
        client.post(f"/admin/allocations/event/{event.pk}/delete/", {"post": "yes"}).status_code
        == 403
    )
    client.post(f"/admin/allocations/event/{event.pk}/change/", {"comment": "rewritten"})
    client.post(
        "/admin/allocations/event/",
        {"action": "delete_selected", "_selected_action": [event.pk], "post": "yes"},
    )
    event.refresh_from_db()
    assert event.comment == "" and Event.objects.filter(pk=event.pk).exists()
    listing = client.get("/admin/allocations/event/")
    assert listing.status_code == 200 and b"delete_selected" not in listing.content
