"""Sections the launcher adds to pages of lower apps (allocations/views.py includes them)."""
from __future__ import annotations

from typing import Any

from allocations.models import Allocation

from . import selectors
from .forms import LaunchForm


def launch_form_for(allocation: Allocation, user: Any) -> LaunchForm | None:
    """An empty launch form when `user` may launch on this allocation (a member; active)."""
    if allocation.status != Allocation.Status.ACTIVE:
        return None
    if not selectors.launchable_allocations(user).filter(pk=allocation.pk).exists():
        return None
    return LaunchForm()


def allocation_sections(allocation: Allocation, user: Any) -> list[dict[str, Any]]:
    """The jobs and sweeps sections of /allocations/<id>/, with the launch form for members of
    an active allocation (three queries; the caller already checked that `user` may see it)."""
    return [{"template": "launcher/allocation_sections.html",
             "data": {"allocation_id": allocation.pk,
                      "launch_form": launch_form_for(allocation, user),
                      "jobs": list(selectors.allocation_jobs(allocation)),
                      "sweeps": list(selectors.allocation_sweeps(allocation))}}]
