"""Trial limits per person, so free trials cannot be farmed with many projects.

A facility's trials are capped per project (one open trial, policy.py) and, here, per person:
the requester and the project's PI each count every trial they are requester or PI of on the
facility, across all their projects:

- at most `Facility.trial_open_per_person` open at once (submitted, changes requested, or
  approved with its allocation still live);
- at most `Facility.trial_per_person_per_period` submitted in the last
  `Facility.trial_period_days` days (withdrawn and rejected ones do not count).

Beyond either limit a trial is not refused: it is not approved automatically and waits for a
reviewer, with the reason on its timeline (services/requests.py, `request_submit`).
"""
from __future__ import annotations

import datetime as dt

from django.db.models import Q, QuerySet
from django.utils import timezone

from .models import Allocation, AllocationRequest

Status = AllocationRequest.Status


def _trials_of(person_id: int, facility_id: int, exclude_id: int | None) -> QuerySet:
    qs = AllocationRequest.objects.filter(
        Q(requested_by_id=person_id) | Q(project__pi_id=person_id), facility_id=facility_id,
        kind=AllocationRequest.Kind.TRIAL, purpose=AllocationRequest.Purpose.NEW)
    return qs.exclude(pk=exclude_id) if exclude_id is not None else qs


def trial_limit_reason(req: AllocationRequest) -> str:
    """Why `req` (a trial being submitted) may not be approved automatically, or ""."""
    facility = req.facility
    since = timezone.now() - dt.timedelta(days=facility.trial_period_days)
    people = {req.requested_by_id, req.project.pi_id}
    for person in sorted(p for p in people if p is not None):
        trials = _trials_of(person, facility.pk, req.pk)
        open_now = trials.filter(
            Q(status__in=[Status.SUBMITTED, Status.CHANGES_REQUESTED])
            | Q(status=Status.APPROVED, allocation__status__in=Allocation.LIVE)).count()
        who = "the requester" if person == req.requested_by_id else "the project's PI"
        if open_now >= facility.trial_open_per_person:
            return (f"{who} already has {open_now} open trial(s) on {facility.name} (at most "
                    f"{facility.trial_open_per_person} per person across all projects)")
        recent = trials.filter(submitted_at__gte=since, status__in=[
            Status.SUBMITTED, Status.CHANGES_REQUESTED, Status.APPROVED]).count()
        if recent >= facility.trial_per_person_per_period:
            return (f"{who} had {recent} trial(s) on {facility.name} in the last "
                    f"{facility.trial_period_days} days (at most "
                    f"{facility.trial_per_person_per_period} per person)")
    return ""
