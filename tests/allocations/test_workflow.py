"""Every move of the request state machine, and every refused one."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied

from allocations import services
from allocations.models import Allocation, AllocationRequest, Event
from allocations.selectors import timeline
from allocations.transitions import InvalidTransition, TransitionConflict
from tests.factories import RequestFactory

pytestmark = pytest.mark.django_db


def test_researcher_submits_a_draft_and_it_is_audited(draft_request, researcher):
    services.request_submit(request=draft_request, by=researcher)

    draft_request.refresh_from_db()
    assert draft_request.status == "submitted"
    assert draft_request.submitted_at is not None
    event = timeline(draft_request).last()
    assert (event.actor, event.from_state, event.to_state) == (researcher, "draft", "submitted")


def test_reviewer_approves_and_the_local_allocation_becomes_active(
    full_request, reviewer, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        allocation = services.request_approve(request=full_request, by=reviewer)

    allocation.refresh_from_db()
    full_request.refresh_from_db()
    assert full_request.status == "approved"
    assert full_request.allocation == allocation
    assert full_request.reviewed_by == reviewer
    assert allocation.gpu_hours == 1000
    assert allocation.status == "active"
    assert [e.to_state for e in timeline(allocation)] == ["provisioning", "active"]


def test_reviewer_may_grant_fewer_hours_but_not_more(full_request, reviewer):
    with pytest.raises(services.PolicyError) as refused:
        services.request_approve(request=full_request, by=reviewer, gpu_hours=1001)
    assert "gpu_hours" in refused.value.message_dict
    full_request.refresh_from_db()
    assert full_request.status == "submitted"
    assert not Allocation.objects.exists()

    allocation = services.request_approve(request=full_request, by=reviewer, gpu_hours=600)
    assert allocation.gpu_hours == 600
    assert "600 of the 1000" in timeline(full_request).last().comment


@pytest.mark.parametrize("action", ["request_reject", "request_request_changes"])
def test_reject_and_request_changes_need_a_comment(full_request, reviewer, action):
    with pytest.raises(services.PolicyError) as refused:
        getattr(services, action)(request=full_request, by=reviewer, comment="  ")
    assert "comment" in refused.value.message_dict
    full_request.refresh_from_db()
    assert full_request.status == "submitted"


def test_reject_records_the_reason(full_request, reviewer):
    services.request_reject(request=full_request, by=reviewer, comment="Use JADE2 instead.")
    full_request.refresh_from_db()
    assert full_request.status == "rejected"
    assert full_request.decision_comment == "Use JADE2 instead."


def test_requester_edits_and_resubmits_after_changes_requested(full_request, reviewer, researcher):
    services.request_request_changes(request=full_request, by=reviewer, comment="Fewer hours.")
    services.request_update(request=full_request, by=researcher, gpu_hours=500)
    services.request_submit(request=full_request, by=researcher)

    full_request.refresh_from_db()
    assert (full_request.status, full_request.gpu_hours) == ("submitted", 500)
    assert [e.to_state for e in timeline(full_request)][-3:] == [
        "submitted",
        "changes_requested",
        "submitted",
    ] or [e.to_state for e in timeline(full_request)][-2:] == ["changes_requested", "submitted"]


@pytest.mark.parametrize("status", ["draft", "submitted", "changes_requested"])
def test_open_requests_can_be_withdrawn(project, facility, researcher, status):
    req = RequestFactory(project=project, facility=facility, requested_by=researcher, status=status)
    services.request_withdraw(request=req, by=researcher)
    req.refresh_from_db()
    assert req.status == "withdrawn"


REFUSED = [
    ("draft", "request_approve"),
    ("draft", "request_reject"),
    ("draft", "request_request_changes"),
    ("approved", "request_submit"),
    ("approved", "request_withdraw"),
    ("approved", "request_approve"),
    ("rejected", "request_submit"),
    ("rejected", "request_approve"),
    ("withdrawn", "request_submit"),
    ("withdrawn", "request_withdraw"),
    ("changes_requested", "request_approve"),
    ("submitted", "request_submit"),
]


@pytest.mark.parametrize("status,action", REFUSED)
def test_moves_the_table_does_not_allow_are_refused(
    project, facility, researcher, reviewer, status, action
):
    req = RequestFactory(project=project, facility=facility, requested_by=researcher, status=status)
    by = (
        reviewer
        if action in {"request_approve", "request_reject", "request_request_changes"}
        else researcher
    )
    kwargs = (
        {"comment": "A reason."} if action in {"request_reject", "request_request_changes"} else {}
    )
    events_before = Event.objects.count()
    with pytest.raises(InvalidTransition):
        getattr(services, action)(request=req, by=by, **kwargs)
    req.refresh_from_db()
    assert req.status == status
    assert Event.objects.count() == events_before
    assert not Allocation.objects.exists()


def test_only_draft_or_changes_requested_requests_can_be_edited(full_request, researcher):
    with pytest.raises(InvalidTransition):
        services.request_update(request=full_request, by=researcher, gpu_hours=10)
    full_request.refresh_from_db()
    assert full_request.gpu_hours == 1000


def test_a_stale_copy_cannot_win_a_race(full_request, reviewer):
    stale = AllocationRequest.objects.get(pk=full_request.pk)
    services.request_reject(request=full_request, by=reviewer, comment="No.")
    with pytest.raises(TransitionConflict):
        services.request_approve(request=stale, by=reviewer)
    assert not Allocation.objects.exists()


def test_only_reviewers_decide_and_never_on_their_own_request(
    full_request, researcher, pi, reviewer, project
):
    with pytest.raises(PermissionDenied):
        services.request_approve(request=full_request, by=pi)
    own = RequestFactory(
        project=project, facility=full_request.facility, requested_by=reviewer, status="submitted"
    )
    with pytest.raises(PermissionDenied):
        services.request_approve(request=own, by=reviewer)
    full_request.refresh_from_db()
    assert full_request.status == "submitted"


def test_others_cannot_submit_or_withdraw_a_members_request(draft_request, outsider):
    with pytest.raises(PermissionDenied):
        services.request_submit(request=draft_request, by=outsider)
    with pytest.raises(PermissionDenied):
        services.request_withdraw(request=draft_request, by=outsider)


def test_the_workflow_says_what_it_did_in_words(client, full_request, reviewer):
    client.force_login(reviewer)
    response = client.post(
        f"/requests/{full_request.pk}/request-changes/", {"comment": "Fewer hours."}, follow=True
    )
    said = [str(m) for m in response.context["messages"]]
    assert said == [f"Request #{full_request.pk} was sent back for changes."]
