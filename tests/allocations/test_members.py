"""Project members through the services and the API: who may add, change and remove them,
each move audited, the last PI protected (409), others' projects 404, and the launcher told
after commit."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied

from allocations import services, signals
from allocations.models import Event, ProjectMembership
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def _roles(project) -> dict[str, str]:
    return dict(project.memberships.values_list("user__username", "role"))


def test_the_pi_adds_a_member_by_email_and_the_launcher_hears_of_it_after_commit(
    pi, project, django_capture_on_commit_callbacks
):
    UserFactory(username="niels", email="Niels@Example.org")
    heard = []

    def listener(sender, project_id, **kwargs):
        heard.append(project_id)

    signals.project_members_changed.connect(listener, dispatch_uid="test-listener")
    try:
        with django_capture_on_commit_callbacks(execute=True) as callbacks:
            user = services.user_find(identifier="niels@example.org")
            membership = services.project_member_add(project=project, by=pi, user=user)
            assert heard == []  # nothing before the commit
    finally:
        signals.project_members_changed.disconnect(dispatch_uid="test-listener")
    assert callbacks and project.pk in heard
    assert membership.role == "member" and membership.cluster_username == "niels"
    event = Event.objects.filter(to_state="member_added").get()
    assert event.actor == pi and event.comment == "niels as member"


def test_a_plain_member_cannot_add_change_or_remove_others(researcher, project, pi):
    outsider = UserFactory(username="mallory")
    with pytest.raises(PermissionDenied):
        services.project_member_add(project=project, by=researcher, user=outsider)
    with pytest.raises(PermissionDenied):
        services.project_member_role_change(project=project, by=researcher, user=pi, role="member")
    with pytest.raises(PermissionDenied):
        services.project_member_remove(project=project, by=researcher, user=pi)
    assert _roles(project) == {"paula": "pi", "rosalind": "member"}


def test_a_manager_manages_members_but_not_pis(pi, researcher, project):
    services.project_member_role_change(project=project, by=pi, user=researcher, role="manager")
    helper = UserFactory(username="hugo")
    services.project_member_add(project=project, by=researcher, user=helper)
    with pytest.raises(PermissionDenied):
        services.project_member_role_change(project=project, by=researcher, user=helper, role="pi")
    with pytest.raises(PermissionDenied):
        services.project_member_remove(project=project, by=researcher, user=pi)
    services.project_member_remove(project=project, by=researcher, user=helper)
    assert _roles(project) == {"paula": "pi", "rosalind": "manager"}
    moves = list(Event.objects.order_by("id").values_list("to_state", flat=True))
    assert moves == ["member_role_changed", "member_added", "member_removed"]


def test_the_last_pi_can_neither_leave_nor_step_down_but_can_hand_over(pi, researcher, project):
    with pytest.raises(services.MembershipConflict):
        services.project_member_remove(project=project, by=pi, user=pi)
    with pytest.raises(services.MembershipConflict):
        services.project_member_role_change(project=project, by=pi, user=pi, role="member")
    services.project_member_role_change(project=project, by=pi, user=researcher, role="pi")
    services.project_member_remove(project=project, by=pi, user=pi)
    project.refresh_from_db()
    assert project.pi == researcher and _roles(project) == {"rosalind": "pi"}


def test_adding_someone_twice_or_an_unknown_user_is_a_field_error(pi, researcher, project):
    with pytest.raises(services.PolicyError) as twice:
        services.project_member_add(project=project, by=pi, user=researcher)
    assert "username" in twice.value.message_dict
    with pytest.raises(services.PolicyError) as unknown:
        services.user_find(identifier="nobody@example.org")
    assert "username" in unknown.value.message_dict


def test_members_api_adds_changes_and_removes(api, pi, researcher, project):
    UserFactory(username="niels")
    client = api.as_user(pi)
    added = client.post(
        f"/api/v1/projects/{project.pk}/members/", {"username": "niels", "role": "manager"}
    )
    assert added.status_code == 200, added.json()
    assert {m["username"]: m["role"] for m in added.json()["members"]}["niels"] == "manager"

    changed = client.patch(f"/api/v1/projects/{project.pk}/members/niels/", {"role": "member"})
    assert changed.status_code == 200
    assert _roles(project)["niels"] == "member"

    removed = client.delete(f"/api/v1/projects/{project.pk}/members/niels/")
    assert removed.status_code == 204 and "niels" not in _roles(project)


def test_members_api_errors_400_403_404_409(api, pi, researcher, outsider, project, other_project):
    client = api.as_user(pi)
    bad_role = client.patch(f"/api/v1/projects/{project.pk}/members/rosalind/", {"role": "boss"})
    assert bad_role.status_code == 400 and "role" in bad_role.json()
    unknown = client.post(f"/api/v1/projects/{project.pk}/members/", {"username": "ghost"})
    assert unknown.status_code == 400 and "username" in unknown.json()
    not_member = client.delete(f"/api/v1/projects/{project.pk}/members/charlie/")
    assert not_member.status_code == 404
    last_pi = client.delete(f"/api/v1/projects/{project.pk}/members/paula/")
    assert last_pi.status_code == 409 and "PI" in last_pi.json()["detail"]
    others = client.post(f"/api/v1/projects/{other_project.pk}/members/", {"username": "rosalind"})
    assert others.status_code == 404
    denied = api.as_user(researcher).delete(f"/api/v1/projects/{project.pk}/members/paula/")
    assert denied.status_code == 403
    assert _roles(project) == {"paula": "pi", "rosalind": "member"}
    assert ProjectMembership.objects.filter(project=other_project).count() == 1


def test_member_routes_are_in_the_openapi_document(api, researcher):
    schema = api.as_user(researcher).get("/api/v1/schema/").content.decode()
    assert "/api/v1/projects/{id}/members/{username}/" in schema


def test_the_project_page_lets_the_pi_manage_members_and_hides_others_projects(
    pi, researcher, outsider, project, other_project
):
    from django.test import Client

    from tests.factories import AllocationFactory

    client = Client()
    client.force_login(pi)
    UserFactory(username="niels")
    page = client.get(f"/projects/{project.pk}/").content.decode()
    assert "Add a member" in page and 'aria-label="Remove rosalind"' in page
    response = client.post(
        f"/projects/{project.pk}/members/add/", {"username": "niels", "role": "member"}, follow=True
    )
    assert "niels was added to ABC-DEF-001." in response.content.decode()
    response = client.post(
        f"/projects/{project.pk}/members/remove/", {"username": "paula"}, follow=True
    )
    assert "A project needs a PI" in response.content.decode()

    member = Client()
    member.force_login(researcher)
    page = member.get(f"/projects/{project.pk}/").content.decode()
    assert "Add a member" not in page and "niels" in page
    assert (
        member.post(f"/projects/{project.pk}/members/add/", {"username": "charlie"}).status_code
        == 302
    )
    assert "charlie" not in _roles(project)
    assert member.get(f"/projects/{other_project.pk}/").status_code == 404
    assert "Ask your PI to add you" not in Client().get("/").content.decode()

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as before:
        client.get(f"/projects/{project.pk}/")
    for n in range(5):
        AllocationFactory(project=project)
        ProjectMembership.objects.create(project=project, user=UserFactory(username=f"m{n}"))
    with CaptureQueriesContext(connection) as after:
        client.get(f"/projects/{project.pk}/")
    assert len(after) == len(before)
