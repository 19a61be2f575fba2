"""Staff hear about failing jobs: one digest email listing every job that failed or timed out
since the last digest, each job told once (`failure_alerted_at`), and one email at once for a
submission that gave up at its deadline (the cluster stayed unreachable). Allocation failures
and manual activations have their own emails; this covers jobs only."""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.core.mail import send_mail
from django.template.loader import render_to_string
from django.utils import timezone

from allocations.notifications import staff_emails

from ..models import Job

LOOKBACK = dt.timedelta(days=7)
LIMIT = 200


def failing_jobs_digest_send(*, now: dt.datetime | None = None) -> int:
    """Email staff the jobs that failed since the last digest; returns how many were listed.
    The jobs are marked after the email went out (a retry may resend, never skip)."""
    now = now or timezone.now()
    jobs = list(
        Job.objects.filter(
            state__in=[Job.State.FAILED, Job.State.TIMEOUT],
            failure_alerted_at__isnull=True,
            finished_at__gte=now - LOOKBACK,
        )
        .select_related("allocation__project", "allocation__facility", "created_by")
        .order_by("finished_at", "id")[:LIMIT]
    )
    recipients = staff_emails()
    if not jobs or not recipients:
        return 0
    body = render_to_string(
        "launcher/email/failing_jobs.txt", {"jobs": jobs, "base_url": settings.PORTAL_BASE_URL}
    )
    send_mail(f"{len(jobs)} job(s) failed", body, settings.DEFAULT_FROM_EMAIL, recipients)
    Job.objects.filter(pk__in=[j.pk for j in jobs]).update(failure_alerted_at=now)
    return len(jobs)


def submission_failure_send(*, job_ids: list[int], reason: str) -> int:
    """Email staff now that these jobs (one job, or one sweep's cells) failed because their
    submission passed its deadline, with the reason; they are marked as told, so the digest
    does not list them again. Returns how many jobs the email named (0: no staff address)."""
    jobs = list(
        Job.objects.filter(pk__in=job_ids)
        .select_related("allocation__project", "allocation__facility", "created_by")
        .order_by("pk")
    )
    recipients = staff_emails()
    if not jobs or not recipients:
        return 0
    facility = jobs[0].allocation.facility
    body = render_to_string(
        "launcher/email/submission_failed.txt",
        {
            "jobs": jobs,
            "reason": reason,
            "facility": facility,
            "base_url": settings.PORTAL_BASE_URL,
        },
    )
    send_mail(
        f"{len(jobs)} job(s) not submitted: {facility.name} unreachable",
        body,
        settings.DEFAULT_FROM_EMAIL,
        recipients,
    )
    Job.objects.filter(pk__in=[j.pk for j in jobs]).update(failure_alerted_at=timezone.now())
    return len(jobs)
