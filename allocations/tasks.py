"""Celery tasks: thin wrappers that load by id and call a service."""

from __future__ import annotations

import logging
import smtplib

from celery import shared_task
from django.utils import timezone

from core.locks import exclusive

from .digests import digest_send
from .models import Allocation, Event, NotificationPreference
from .notifications import send_event_email
from .services import allocation_expire, ledger_reconcile, usage_check_all
from .transitions import InvalidTransition

log = logging.getLogger(__name__)


@shared_task(
    name="allocations.send_notification",
    autoretry_for=(smtplib.SMTPException, OSError),
    retry_backoff=True,
    max_retries=5,
)
def send_notification(kind: str, event_id: int) -> int:
    event = Event.objects.select_related("actor").filter(pk=event_id).first()
    if event is None:
        return 0
    return send_event_email(kind, event)


@shared_task(name="allocations.expire_allocations")
@exclusive("allocations.expire_allocations")
def expire_allocations() -> int:
    """Move allocations past their end date to expired (backends then block them)."""
    today = timezone.localdate()
    expired = 0
    live = [Allocation.Status.ACTIVE, Allocation.Status.SUSPENDED, Allocation.Status.EXHAUSTED]
    for allocation in Allocation.objects.filter(status__in=live, end_date__lt=today):
        try:
            allocation_expire(allocation=allocation)
            expired += 1
        except InvalidTransition:
            log.info("allocation %s moved by someone else; skipping", allocation.pk)
    return expired


@shared_task(
    name="allocations.send_usage_digests",
    autoretry_for=(smtplib.SMTPException, OSError),
    retry_backoff=True,
    max_retries=5,
)
@exclusive("allocations.send_usage_digests")
def send_usage_digests() -> int:
    """Beat (daily): send each weekly-digest person their digest once a week is up."""
    sent = 0
    for preference in NotificationPreference.objects.filter(
        usage_alerts=NotificationPreference.Usage.WEEKLY
    ).select_related("user"):
        sent += digest_send(preference=preference)
    return sent


@shared_task(name="allocations.reconcile_ledger")
@exclusive("allocations.reconcile_ledger")
def reconcile_ledger() -> int:
    """Beat: recompute every allocation's ledger columns from the records; drifts are corrected,
    logged and audited (allocations/ledger.py). Returns the number corrected."""
    return len(ledger_reconcile())


@shared_task(name="allocations.check_usage_alerts")
@exclusive("allocations.check_usage_alerts")
def check_usage_alerts() -> int:
    """Beat (hourly): the projection alert for active allocations whose 7-day rate, which moves
    at midnight, now says they run out early (allocations/services/usage.py). Returns the
    number checked."""
    return usage_check_all()
