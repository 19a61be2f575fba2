"""What waits for centre staff, read in a fixed number of queries (each list bounded).

- requests submitted and waiting for a decision, oldest first, with their age;
- allocations that failed provisioning, or wait for staff to activate them by hand;
- active allocations at >= 80% of their GPU-hours or within 14 days of their end date;
- facilities whose backend is not configured (they behave as manual);
- jobs that failed or timed out in the last 7 days;
- members whose cluster login could not be mirrored to a backend account (left out of the
  account until it is fixed; every account sync retries them).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db.models import Q, QuerySet
from django.utils import timezone

from allocations.list_selectors import NEAR_DAYS, NEAR_END, NEAR_PERCENT, cpu_only, near_their_end
from allocations.models import Allocation, AllocationRequest, Facility, ProjectMembership
from allocations.roles import sees_all_projects
from launcher.backends.contract import Capability
from launcher.backends.registry import backends_with, is_connected
from launcher.models import Job

#: Rows a list shows; the whole of one is a link away (the review queue, the allocations list
#: near their end) or said in words.
LIMIT = 20
FAILING_DAYS = 7


@dataclass(frozen=True)
class Queue:
    rows: list
    total: int


def _queue(qs: QuerySet) -> Queue:
    rows = list(qs[:LIMIT])
    return Queue(rows=rows, total=len(rows) if len(rows) < LIMIT else qs.count())


def member_sync_failures() -> Queue:
    return _queue(
        ProjectMembership.objects.exclude(sync_error="")
        .select_related("project", "user")
        .order_by("project__code", "id")
    )


def waiting_requests() -> Queue:
    return _queue(
        AllocationRequest.objects.filter(status=AllocationRequest.Status.SUBMITTED)
        .select_related("project", "facility", "requested_by")
        .annotate(cpu_only=cpu_only())  # each row's unit, in the same query
        .order_by("submitted_at", "id")
    )


def stuck_allocations() -> Queue:
    """Failed, or provisioning where staff must act: the facility's backend cannot provision
    (manual, or registered but not configured: `allocation_await_staff` left the reason)."""
    provisioners = backends_with(Capability.PROVISION)
    waiting = Q(status=Allocation.Status.PROVISIONING) & (
        ~Q(facility__backend__in=provisioners) | ~Q(status_reason="")
    )
    return _queue(
        Allocation.objects.filter(Q(status=Allocation.Status.FAILED) | waiting)
        .select_related("project", "facility")
        .order_by("created_at", "id")
    )


def allocations_near_their_end() -> Queue:
    """The allocations near their end (allocations.list_selectors.near_their_end)."""
    return _queue(
        near_their_end(
            Allocation.objects.select_related("project", "facility").annotate(cpu_only=cpu_only())
        )
    )


def unconfigured_facilities() -> list[tuple[Facility, str]]:
    """Active facilities the portal cannot provision on (the registry serves them as manual)."""
    facilities = Facility.objects.filter(is_active=True).order_by("name")[:200]
    return [
        (
            f,
            f"{f.get_backend_display()}: the portal cannot set allocations up here; staff "
            "do it by hand and activate them.",
        )
        for f in facilities
        if not is_connected(f)
    ]


def failing_jobs() -> Queue:
    since = timezone.now() - dt.timedelta(days=FAILING_DAYS)
    return _queue(
        Job.objects.filter(state__in=[Job.State.FAILED, Job.State.TIMEOUT], finished_at__gte=since)
        .select_related("allocation__project", "allocation__facility", "created_by")
        .order_by("-finished_at", "-id")
    )


def staff_home(user) -> dict:
    """Everything the staff home shows; reviewers and admins only (others get nothing)."""
    if not sees_all_projects(user):
        return {}
    return {
        "requests": waiting_requests(),
        "stuck": stuck_allocations(),
        "near_end": allocations_near_their_end(),
        "facilities": unconfigured_facilities(),
        "failing_jobs": failing_jobs(),
        "member_sync": member_sync_failures(),
        "near_days": NEAR_DAYS,
        "near_end_status": NEAR_END,
        "near_percent": NEAR_PERCENT,
        "failing_days": FAILING_DAYS,
    }
