"""Notification emails: who hears about what, and what they read."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.contenttypes.models import ContentType
from django.core.mail import send_mail
from django.db.models import Q
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from core.tasks import enqueue

from .models import Allocation, AllocationRequest, Event, NotificationPreference, UsageAlert

SUBJECTS = {
    "request_submitted": "Request #{id} submitted: {project} on {facility}",
    "request_decided": "Request #{id} {status}: {project} on {facility}",
    "changes_requested": "Request #{id} needs changes: {project} on {facility}",
    "usage_threshold": "Allocation #{id} usage alert: {project} on {facility}",
    "usage_projection": "Allocation #{id} usage alert, runs out early: {project} on {facility}",
    "allocation_failed": "Allocation #{id} failed: {project} on {facility}",
    "allocation_waiting": "Allocation #{id} waits for staff: {project} on {facility}",
}
# Kinds research-computing staff must act on: they hear about each, whoever else does.
STAFF_KINDS = {"allocation_failed", "allocation_waiting"}
# The email of each kind of usage alert (UsageAlert.Kind): the PI and members hear of each,
# in one email per alert or, if they chose it, in their weekly digest (allocations/digests.py).
ALERT_EMAILS: dict[str, str] = {
    UsageAlert.Kind.THRESHOLD: "usage_threshold",
    UsageAlert.Kind.PROJECTION: "usage_projection",
}
USAGE_KINDS = frozenset(ALERT_EMAILS.values())


def _reviewer_emails() -> list[str]:
    users = (
        get_user_model()
        .objects.filter(groups__name=settings.PORTAL_REVIEWERS_GROUP, is_active=True)
        .exclude(email="")
    )
    return sorted(set(users.values_list("email", flat=True)))


def staff_emails() -> list[str]:
    """Staff users and reviewers: the people who can activate or repair an allocation, and
    who hear of failing jobs."""
    users = (
        get_user_model()
        .objects.filter(
            Q(is_staff=True) | Q(groups__name=settings.PORTAL_REVIEWERS_GROUP), is_active=True
        )
        .exclude(email="")
    )
    return sorted(set(users.values_list("email", flat=True)))


def _recipients(kind: str, obj) -> list[str]:
    project = obj.project
    people = {project.pi_email, getattr(getattr(obj, "requested_by", None), "email", "")}
    if kind == "request_submitted" and obj.status == AllocationRequest.Status.SUBMITTED:
        people.update(_reviewer_emails())
    if isinstance(obj, Allocation):
        people.update(m.user.email for m in project.memberships.select_related("user"))
    if kind in USAGE_KINDS:
        people -= weekly_digest_emails()  # they get it in their weekly digest instead
    if kind in STAFF_KINDS:
        people.update(staff_emails())
    return sorted(p for p in people if p)


def weekly_digest_emails() -> set[str]:
    """Emails of people who chose a weekly digest of usage alerts over one email each."""
    return set(
        NotificationPreference.objects.filter(
            usage_alerts=NotificationPreference.Usage.WEEKLY, user__is_active=True
        )
        .exclude(user__email="")
        .values_list("user__email", flat=True)
    )


# What an email reads of its subject (notification.txt, the subject line, the recipients),
# joined in the one read of the subject rather than read a row at a time.
_JOINED: dict[type, tuple[str, ...]] = {
    AllocationRequest: ("project", "facility", "requested_by", "allocation"),
    Allocation: ("project", "facility"),
}


def _subject(event: Event):
    """The object the event is about (None if it is gone)."""
    model = ContentType.objects.get_for_id(event.content_type_id).model_class()
    if model not in _JOINED:
        return event.subject
    return model._default_manager.select_related(*_JOINED[model]).filter(pk=event.object_id).first()


def send_event_email(kind: str, event: Event) -> int:
    """Send the email for one audit event; returns the number of recipients."""
    obj = _subject(event)
    if obj is None or kind not in SUBJECTS:
        return 0
    url_name = "request-detail" if isinstance(obj, AllocationRequest) else "allocation-detail"
    context = {
        "kind": kind,
        "event": event,
        "obj": obj,
        "url": settings.PORTAL_BASE_URL + reverse(url_name, args=[obj.pk]),
    }
    subject = SUBJECTS[kind].format(
        id=obj.pk,
        project=obj.project.code,
        facility=obj.facility.name,
        status=event.to_state.replace("_", " "),
    )
    recipients = _recipients(kind, obj)
    if not recipients:
        return 0
    body = render_to_string("allocations/email/notification.txt", context)
    send_mail(subject, body, settings.DEFAULT_FROM_EMAIL, recipients)
    if kind in USAGE_KINDS:  # the alert's record says to whom it went, once it went
        UsageAlert.objects.filter(event_id=event.pk).update(
            emailed_to=recipients, emailed_at=timezone.now()
        )
    return len(recipients)


def notify_after_commit(kind: str, event_id: int) -> None:
    """Enqueue the email about an audit event once the transaction has committed (sending is
    network I/O; allocations/tasks.py `send_notification` calls `send_event_email`)."""
    enqueue("allocations.send_notification", kind, event_id)
