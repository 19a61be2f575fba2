"""The usage ledger (idempotent, alerts, exhaustion) and the notification emails."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.core import mail
from django.utils import timezone

from allocations import services
from allocations.models import UsageRecord
from allocations.selectors import allocation_usage_totals
from tests.factories import AllocationFactory

pytestmark = pytest.mark.django_db


def usage(allocation, external_id, hours):
    now = timezone.now()
    return UsageRecord(
        allocation=allocation,
        source="slurm",
        external_id=external_id,
        period_start=now,
        period_end=now,
        gpu_seconds=int(hours * 3600),
    )


def test_recording_the_same_backend_records_twice_charges_them_once(project):
    allocation = AllocationFactory(project=project, gpu_hours=Decimal(100))
    services.usage_record_many([usage(allocation, "41.0", 2), usage(allocation, "42.0", 3)])
    services.usage_record_many([usage(allocation, "41.0", 2), usage(allocation, "43.0", 1)])
    assert allocation_usage_totals(allocation.pk)["gpu_hours"] == 6


def test_alerts_go_out_once_at_each_threshold_and_exhaustion_blocks(
    project, django_capture_on_commit_callbacks
):
    allocation = AllocationFactory(project=project, gpu_hours=Decimal(10))
    with django_capture_on_commit_callbacks(execute=True):
        services.usage_record_many([usage(allocation, "1", 5.5)])
        assert services.usage_check_thresholds(allocation_id=allocation.pk) == [50]
        assert services.usage_check_thresholds(allocation_id=allocation.pk) == []
        services.usage_record_many([usage(allocation, "2", 4.5)])
        assert services.usage_check_thresholds(allocation_id=allocation.pk) == [80, 95, 100]
    allocation.refresh_from_db()
    assert allocation.status == "exhausted"
    subjects = [m.subject for m in mail.outbox]
    assert len(subjects) == 2 and all("usage alert" in s for s in subjects)
    assert "100% of the granted GPU-hours" in mail.outbox[-1].body


def test_submission_emails_reviewers_and_the_requester(
    full_request, draft_request, researcher, reviewer, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        services.request_submit(request=draft_request, by=researcher)
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert "submitted" in message.subject
    assert {reviewer.email, researcher.email} <= set(message.to)
    assert f"/requests/{draft_request.pk}/" in message.body


def test_decisions_and_change_requests_email_the_requester_with_the_comment(
    project, facility, researcher, reviewer, django_capture_on_commit_callbacks
):
    from tests.factories import RequestFactory

    first = RequestFactory(
        project=project, facility=facility, requested_by=researcher, status="submitted"
    )
    second = RequestFactory(
        project=project, facility=facility, requested_by=researcher, status="submitted"
    )
    with django_capture_on_commit_callbacks(execute=True):
        services.request_reject(request=first, by=reviewer, comment="Try JADE2.")
        services.request_request_changes(request=second, by=reviewer, comment="Add detail.")
    rejected, changes = mail.outbox
    assert "rejected" in rejected.subject and "Try JADE2." in rejected.body
    assert "needs changes" in changes.subject and "Add detail." in changes.body
    assert researcher.email in rejected.to and researcher.email in changes.to
