"""Notifications a person wants: one email per decision (no duplicates), a weekly digest of
usage alerts instead of one email each for those who chose it, and staff told of failing jobs
once each."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.core import mail
from django.test import Client
from django.utils import timezone

from allocations import services
from allocations.digests import digest_send
from allocations.models import NotificationPreference
from allocations.services import usage_check_thresholds
from allocations.tasks import send_usage_digests
from launcher.models import Job
from launcher.tasks import failing_jobs_digest
from tests.factories import AllocationFactory, charge

pytestmark = pytest.mark.django_db


def test_each_decision_sends_exactly_one_email(
    full_request, reviewer, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        services.request_approve(request=full_request, by=reviewer, gpu_hours=800)
    decided = [m for m in mail.outbox if "approved" in m.subject]
    assert len(decided) == 1 and len(mail.outbox) == 1
    assert "Granted 800 of the 1000 GPU-hours requested." in decided[0].body


def _use(allocation, seconds, n):
    now = timezone.now()
    charge(
        allocation=allocation,
        source="local",
        external_id=f"d{n}",
        period_start=now,
        period_end=now,
        gpu_seconds=seconds,
    )


def test_weekly_digest_replaces_one_email_per_alert(
    project, pi, researcher, django_capture_on_commit_callbacks
):
    client = Client()
    client.force_login(researcher)
    client.post("/account/notifications/", {"usage_alerts": "weekly"})
    assert NotificationPreference.objects.get(user=researcher).usage_alerts == "weekly"
    allocation = AllocationFactory(project=project, gpu_hours=Decimal("10"))
    for n, seconds in enumerate((6 * 3600, 3 * 3600)):  # 60% then 90%: two alerts
        _use(allocation, seconds, n)
        with django_capture_on_commit_callbacks(execute=True):
            usage_check_thresholds(allocation_id=allocation.pk)
    alerts = [m for m in mail.outbox if "usage alert" in m.subject]
    assert len(alerts) == 2
    assert all(researcher.email not in m.to for m in alerts)  # the digest person is left out
    assert all(pi.email in m.to for m in alerts)  # the others still get each alert

    mail.outbox.clear()
    assert send_usage_digests() == 1
    (digest,) = mail.outbox
    assert digest.to == [researcher.email]
    assert "50%" in digest.body and "80%" in digest.body and f"#{allocation.pk}" in digest.body
    assert send_usage_digests() == 0  # not again within the week
    preference = NotificationPreference.objects.get(user=researcher)
    later = preference.digest_sent_until + dt.timedelta(days=7, minutes=1)
    assert digest_send(preference=preference, now=later) == 0  # a quiet week sends nothing
    assert len(mail.outbox) == 1


def test_staff_hear_of_each_failing_job_once(project, researcher, reviewer, admin):
    allocation = AllocationFactory(project=project)
    for n in range(2):
        Job.objects.create(
            allocation=allocation,
            created_by=researcher,
            token=f"portal-job-f{n}",
            state="failed",
            state_reason=f"exit code {n + 1}",
            finished_at=timezone.now(),
        )
    Job.objects.create(
        allocation=allocation,
        created_by=researcher,
        token="portal-job-ok",
        state="succeeded",
        finished_at=timezone.now(),
    )
    assert failing_jobs_digest() == 2
    (message,) = mail.outbox
    assert set(message.to) == {reviewer.email, admin.email}
    assert "exit code 1" in message.body and "exit code 2" in message.body
    assert failing_jobs_digest() == 0 and len(mail.outbox) == 1
