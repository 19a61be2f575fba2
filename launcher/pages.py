"""Sections the launcher adds to pages of lower apps (allocations/views.py includes them)."""
from __future__ import annotations

from typing import Any

from allocations.models import Allocation

from . import access, params, selectors
from .backends.registry import Capability, supports
from .forms import LaunchForm, SweepForm


def launch_form_for(allocation: Allocation, user: Any) -> LaunchForm | None:
    """An empty launch form when `user` may launch on this allocation (a member or staff;
    active; its facility's backend can submit work)."""
    if allocation.status != Allocation.Status.ACTIVE:
        return None
    if not supports(allocation.facility, Capability.SUBMIT):
        return None
    if not access.can_act(user, allocation):
        return None
    return LaunchForm(allocation=allocation)


def allocation_sections(allocation: Allocation, user: Any) -> list[dict[str, Any]]:
    """The jobs and sweeps sections of /allocations/<id>/, with the launch form for members of
    an active allocation (three queries; the selectors refuse a user who may not see it)."""
    return [{"template": "launcher/allocation_sections.html",
             "data": {"allocation_id": allocation.pk,
                      "launch_form": (form := launch_form_for(allocation, user)),
                      "sweep_form": SweepForm(allocation=allocation) if form is not None else None,
                      "default_job": params.DEFAULT_JOB,
                      "jobs": selectors.allocation_jobs(allocation, by=user),
                      "sweeps": selectors.allocation_sweeps(allocation, by=user)}}]
