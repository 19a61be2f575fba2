"""Facility policy: trial caps and length, auto-approval, one open trial, dates, tiers."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from allocations import services
from allocations.models import Allocation, AllocationRequest
from allocations.selectors import timeline
from tests.factories import AllocationFactory, RequestFactory

pytestmark = pytest.mark.django_db
TODAY = timezone.localdate


def trial(project, facility, by, **overrides):
    values = dict(
        facility=facility,
        kind="trial",
        gpu_hours=400,
        start_date=TODAY(),
        end_date=TODAY() + dt.timedelta(days=30),
        justification="Trying DenseNet-121 on chest CT slices.",
    )
    values.update(overrides)
    return services.request_create(by=by, project=project, **values)


def test_a_trial_over_the_cap_is_refused_on_gpu_hours(project, facility, researcher):
    with pytest.raises(services.PolicyError) as refused:
        trial(project, facility, researcher, gpu_hours=401)
    assert "capped at 400 GPU-hours" in refused.value.message_dict["gpu_hours"][0]
    assert not AllocationRequest.objects.exists()


def test_a_trial_at_the_cap_on_an_auto_approving_facility_is_approved_by_the_system(
    project, facility, researcher, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        req = trial(project, facility, researcher)
        services.request_submit(request=req, by=researcher)

    req.refresh_from_db()
    assert req.status == "approved"
    approval = timeline(req).last()
    assert approval.to_state == "approved" and approval.actor is None
    assert "automatically" in approval.comment
    assert req.allocation.status == "active"
    assert req.allocation.kind == "trial"


def test_a_trial_where_the_facility_does_not_auto_approve_waits_for_review(
    project, strict_facility, researcher
):
    req = trial(project, strict_facility, researcher)
    services.request_submit(request=req, by=researcher)
    req.refresh_from_db()
    assert req.status == "submitted"


def test_a_trial_needs_a_sentence_of_justification(project, facility, researcher):
    with pytest.raises(services.PolicyError) as refused:
        trial(project, facility, researcher, justification="x")
    assert "justification" in refused.value.message_dict


def test_a_trial_cannot_last_longer_than_the_trial_length(project, facility, researcher):
    with pytest.raises(services.PolicyError) as refused:
        trial(project, facility, researcher, end_date=TODAY() + dt.timedelta(days=91))
    assert "at most 90 days" in refused.value.message_dict["end_date"][0]


def test_a_trial_allocation_expires_after_the_trial_length(
    project, facility, researcher, django_capture_on_commit_callbacks
):
    facility.trial_days = 10
    facility.save()
    with django_capture_on_commit_callbacks(execute=True):
        req = trial(project, facility, researcher, end_date=TODAY() + dt.timedelta(days=10))
        services.request_submit(request=req, by=researcher)
    allocation = Allocation.objects.get()
    assert allocation.end_date == TODAY() + dt.timedelta(days=10)

    Allocation.objects.filter(pk=allocation.pk).update(end_date=TODAY() - dt.timedelta(days=1))
    from allocations.tasks import expire_allocations

    assert expire_allocations() == 1
    allocation.refresh_from_db()
    assert allocation.status == "expired"


def test_one_open_trial_per_project_and_facility(project, facility, strict_facility, researcher):
    first = trial(project, strict_facility, researcher)
    services.request_submit(request=first, by=researcher)
    with pytest.raises(services.PolicyError) as refused:
        trial(project, strict_facility, researcher)
    assert "already has an open trial" in refused.value.message_dict["kind"][0]
    # Another facility is fine, and so is the same one once the trial is withdrawn.
    trial(project, facility, researcher)
    services.request_withdraw(request=first, by=researcher)
    trial(project, strict_facility, researcher)


def test_a_live_trial_allocation_also_blocks_a_second_trial(project, facility, researcher):
    AllocationFactory(project=project, facility=facility, kind="trial", status="active")
    with pytest.raises(services.PolicyError):
        trial(project, facility, researcher)


def test_converting_a_trial_closes_it_and_grants_a_full_allocation(
    project, facility, researcher, reviewer, django_capture_on_commit_callbacks
):
    trial_allocation = AllocationFactory(project=project, facility=facility, kind="trial")
    req = RequestFactory(
        project=project,
        facility=facility,
        requested_by=researcher,
        purpose="trial_conversion",
        extends=trial_allocation,
    )
    services.request_submit(request=req, by=researcher)
    with django_capture_on_commit_callbacks(execute=True):
        full = services.request_approve(request=req, by=reviewer)
    trial_allocation.refresh_from_db()
    assert trial_allocation.status == "closed"
    assert f"#{full.pk}" in timeline(trial_allocation).last().comment
    assert full.kind == "full"


def test_a_top_up_raises_the_grant_and_revives_an_exhausted_allocation(
    project, facility, researcher, reviewer
):
    allocation = AllocationFactory(
        project=project, facility=facility, status="exhausted", gpu_hours=100
    )
    req = RequestFactory(
        project=project,
        facility=facility,
        requested_by=researcher,
        purpose="top_up",
        extends=allocation,
        gpu_hours=50,
    )
    services.request_submit(request=req, by=researcher)
    result = services.request_approve(request=req, by=reviewer)
    allocation.refresh_from_db()
    assert result.pk == allocation.pk
    assert allocation.gpu_hours == 150
    assert allocation.status == "active"
    assert Allocation.objects.count() == 1


def test_a_full_request_needs_a_real_justification(project, facility, researcher):
    with pytest.raises(services.PolicyError) as refused:
        services.request_create(
            by=researcher,
            project=project,
            facility=facility,
            kind="full",
            gpu_hours=1000,
            start_date=TODAY(),
            end_date=TODAY() + dt.timedelta(days=30),
            justification="Need GPUs.",
        )
    assert "at least 25 different words" in refused.value.message_dict["justification"][0]


@pytest.mark.parametrize(
    "start,end,message",
    [(0, 0, "after the start date"), (10, 5, "after the start date"), (0, 400, "at the latest")],
)
def test_dates_are_checked_against_each_other_and_the_facility(
    project, facility, researcher, start, end, message
):
    with pytest.raises(services.PolicyError) as refused:
        services.request_create(
            by=researcher,
            project=project,
            facility=facility,
            gpu_hours=10,
            start_date=TODAY() + dt.timedelta(days=start),
            end_date=TODAY() + dt.timedelta(days=end),
            justification=" ".join(["word"] * 30),
        )
    assert message in refused.value.message_dict["end_date"][0]


def test_the_data_sensitivity_tier_must_be_one_the_facility_accepts(project, facility, researcher):
    with pytest.raises(services.PolicyError) as refused:
        services.request_create(
            by=researcher,
            project=project,
            facility=facility,
            gpu_hours=10,
            start_date=TODAY(),
            end_date=TODAY() + dt.timedelta(days=5),
            data_sensitivity="special",
            justification=" ".join(["word"] * 30),
        )
    assert "does not accept special data" in refused.value.message_dict["data_sensitivity"][0]


def test_only_members_can_request_for_a_project(project, facility, outsider):
    with pytest.raises(services.PolicyError) as refused:
        trial(project, facility, outsider)
    assert "project" in refused.value.message_dict
