"""The launcher's sections of the allocation page /allocations/<id>/, composed here (the page is
launcher.views.allocation_detail): jobs and sweeps, then the cloud's clusters and cost per day
(launcher/cloud/pages.py), then notebooks (launcher/notebooks/pages.py)."""

from __future__ import annotations

from typing import Any

from django.utils.functional import SimpleLazyObject
from django.utils.translation import get_language

from allocations.models import Allocation
from core.versions import fragment_key

from . import params, selectors
from .backends.contract import Capability
from .backends.registry import supports
from .cloud import pages as cloud_pages
from .estimates import capacity_note
from .forms import LaunchForm, SweepForm
from .notebooks import pages as notebook_pages


def can_launch(allocation: Allocation, user: Any) -> bool:
    """Whether `user` may launch on this allocation (a member or staff; active; its facility's
    backend can submit work)."""
    return (
        allocation.status == Allocation.Status.ACTIVE
        and supports(allocation.facility, Capability.SUBMIT)
        and selectors.can_act(user, allocation)
    )


def forms_key(allocation: Allocation) -> str:
    """The cache key of the two empty forms' fields as rendered: they show the project's
    datasets (a dataset change records an event, which bumps the project's version) and a wall
    time predicted from the node type and the shared catalogue (its own version). Neither form
    holds anything of the user: the CSRF token and the live capacity note are outside the
    cached fragment (launcher/templates/launcher/_launch_form.html, _sweep_form.html)."""
    return fragment_key(
        "launch-forms",
        allocation.pk,
        allocation.node_type_id,
        allocation.facility_id,
        get_language(),
        project_ids=[allocation.project_id],
        catalogue=True,
    )


def allocation_sections(allocation: Allocation, user: Any) -> list[dict[str, Any]]:
    """The jobs and sweeps sections of /allocations/<id>/, with the launch and sweep forms for
    members of an active allocation (the selectors refuse a user who may not see it). The forms
    are built only if the page renders them, i.e. when their cached fields are missing."""
    launch = can_launch(allocation, user)
    return [
        {
            "template": "launcher/allocation_sections.html",
            "data": {
                "allocation_id": allocation.pk,
                "unit": allocation.facility.unit,  # GPU-hours, or CPU-hours without GPUs
                "can_launch": launch,
                "forms_key": forms_key(allocation) if launch else None,
                "launch_form": SimpleLazyObject(lambda: LaunchForm(allocation=allocation)),
                "sweep_form": SimpleLazyObject(lambda: SweepForm(allocation=allocation)),
                "capacity_note": capacity_note(allocation.facility) if launch else "",
                "default_job": params.DEFAULT_JOB,
                "jobs": selectors.allocation_jobs(allocation, by=user),
                "sweeps": selectors.allocation_sweeps(allocation, by=user),
            },
        }
    ]


def allocation_page_sections(allocation: Allocation, user: Any) -> list[dict[str, Any]]:
    """Every section the launcher shows below the allocation's own page, in page order. The
    view has already checked that `user` may see the allocation."""
    return [
        *allocation_sections(allocation, user),
        *cloud_pages.allocation_sections(allocation, user),
        *notebook_pages.notebook_sections(allocation, user),
    ]
