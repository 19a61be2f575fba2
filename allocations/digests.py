"""The weekly digest of usage alerts, for people who chose it over one email per alert.

Each digest covers the usage alerts (both kinds: thresholds reached and projected to run out
early; each an event with its `UsageAlert` record, which is how they are found) from where the
last one ended (`digest_sent_until`) to now, for the allocations of the person's projects. The period end is saved only after the
email went out, so a retried task resends rather than skips; a period with no alert sends
nothing but still moves on.
"""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.contrib.contenttypes.models import ContentType
from django.core.mail import send_mail
from django.template.loader import render_to_string
from django.utils import timezone

from .models import Allocation, Event, NotificationPreference, ProjectMembership

WEEK = dt.timedelta(days=7)


def usage_alert_events(*, user, since: dt.datetime, until: dt.datetime) -> list[Event]:
    """Usage-alert events (those with a `UsageAlert` record) of the allocations of `user`'s
    projects in [since, until)."""
    project_ids = ProjectMembership.objects.filter(user=user).values("project_id")
    allocation_ids = Allocation.objects.filter(project_id__in=project_ids).values("pk")
    ct = ContentType.objects.get_for_model(Allocation)
    return list(
        Event.objects.filter(
            content_type=ct,
            object_id__in=allocation_ids,
            created_at__gte=since,
            created_at__lt=until,
            usage_alert__isnull=False,
        ).order_by("created_at")[:200]
    )


def digest_send(*, preference: NotificationPreference, now: dt.datetime | None = None) -> int:
    """Send one person's digest if it is due (a week since the last). Returns emails sent."""
    now = now or timezone.now()
    since = preference.digest_sent_until or (now - WEEK)
    if now - since < WEEK and preference.digest_sent_until is not None:
        return 0
    events = usage_alert_events(user=preference.user, since=since, until=now)
    sent = 0
    if events and preference.user.email:
        allocations = Allocation.objects.select_related("project", "facility").in_bulk(
            [e.object_id for e in events]
        )
        lines = [(e, allocations.get(e.object_id)) for e in events]
        body = render_to_string(
            "allocations/email/usage_digest.txt",
            {"lines": lines, "since": since, "until": now, "base_url": settings.PORTAL_BASE_URL},
        )
        send_mail(
            f"Weekly usage digest: {len(events)} alert(s)",
            body,
            settings.DEFAULT_FROM_EMAIL,
            [preference.user.email],
        )
        sent = 1
    NotificationPreference.objects.filter(pk=preference.pk).update(digest_sent_until=now)
    return sent
