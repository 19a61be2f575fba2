"""What the notebooks add to the allocation page (launcher/pages.py): the "Open a notebook"
form (or why none can be opened), the sessions, and one timeline of the allocation's jobs and
notebook sessions. Two queries whatever the number of rows (the sessions; the latest jobs, shared
with the jobs table: launcher.selectors.latest_jobs), a third (the node types) only when
the form's cached fields are missing)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, cast

from django.conf import settings
from django.utils.functional import SimpleLazyObject
from django.utils.translation import get_language

from allocations.ledger import ledger_of
from allocations.models import Allocation
from allocations.selectors import is_member
from core.versions import fragment_key

from ..estimates import notebook_slots_refusal
from ..selectors import latest_jobs
from . import figures, selectors
from .forms import NotebookForm
from .models import NotebookSession
from .services import notebook_refusal

SHOWN = 50


@dataclass(frozen=True)
class Use:
    """One row of the allocation's timeline: a job or a notebook session."""

    kind: str
    pk: int
    link: str
    label: str
    state: str
    state_label: str
    started: datetime
    gpu_seconds: int


def decorate(sessions: list[NotebookSession], user: Any) -> list[NotebookSession]:
    """Each session with what the page shows: GPU-seconds so far, idle seconds, and whether
    `user` may open (the owner) or stop it (the owner or staff)."""
    for s in sessions:
        s.so_far = figures.gpu_seconds_so_far(s)  # type: ignore[attr-defined]
        s.idle_for = figures.idle_seconds(s)  # type: ignore[attr-defined]
        s.can_open = selectors.may_open(user, s) and s.state == s.State.RUNNING  # type: ignore[attr-defined]
        s.can_stop = (  # type: ignore[attr-defined]
            not s.is_final and s.state != s.State.STOPPING and selectors.may_stop(user, s)
        )
    return sessions


def timeline(allocation: Allocation, sessions: list[NotebookSession]) -> list[Use]:
    """Jobs and notebook sessions of the allocation, newest first, as one list of its use."""
    unit = allocation.facility.unit  # GPUs, or CPUs where it has no GPUs
    jobs = latest_jobs(allocation)[:SHOWN]  # shared with the jobs table (one query)
    rows = [
        Use(
            "job",
            j.pk,
            f"/jobs/{j.pk}/",
            f"job #{j.pk} {j.params.get('model', '')}".strip()
            + (f" (sweep #{j.sweep_id})" if j.sweep_id else ""),
            j.state,
            j.get_state_display(),
            j.created_at,
            int(j.gpu_seconds),
        )
        for j in jobs
    ]
    rows += [
        Use(
            "notebook",
            s.pk,
            f"/notebooks/{s.pk}/",
            f"notebook #{s.pk} ({s.gpus} {unit.of(s.gpus)}, {s.hours.normalize():f} h, "
            f"{s.user.username})",
            s.state,
            s.get_state_display(),
            s.created_at,
            s.so_far,  # type: ignore[attr-defined]
        )
        for s in sessions
    ]
    return sorted(rows, key=lambda r: r.started, reverse=True)[:SHOWN]


def fields_key(allocation: Allocation) -> str:
    """The cache key of the empty form's fields and its default estimate as rendered: both
    come from the GPUs of one node (the node type, else the facility's largest: the shared
    catalogue, with its own version) and settings.NOTEBOOK_MAX_HOURS. Nothing of the user or
    of the ledger: the CSRF token and the GPU-hours left are outside the cached fragments
    (notebooks/allocation_section.html)."""
    return fragment_key(
        "notebook-fields",
        allocation.node_type_id,
        allocation.facility_id,
        get_language(),
        settings.NOTEBOOK_MAX_HOURS,
        project_ids=(),
        catalogue=True,
    )


def notebook_sections(allocation: Allocation, user: Any) -> list[dict[str, Any]]:
    """The notebooks section of /allocations/<id>/ (the view has checked that `user` sees it).
    The form is built only when its cached fields are missing; the GPU-hours left are the
    ledger of the allocation row this page read (the figure its "Remaining" shows)."""
    sessions = decorate(list(selectors.allocation_sessions(allocation.pk)[:SHOWN]), user)
    refusal = notebook_refusal(allocation)
    member = is_member(user, allocation.project_id)
    show_form = not refusal and member
    # Built on first use; the lazy object stands in for the form.
    form = cast(NotebookForm, SimpleLazyObject(lambda: NotebookForm(allocation=allocation)))
    return [
        {
            "template": "notebooks/allocation_section.html",
            "data": {
                "allocation_id": allocation.pk,
                "unit": allocation.facility.unit,
                "sessions": sessions,
                "show_form": show_form,
                "form": form,
                "fields_key": fields_key(allocation) if show_form else None,
                "refusal": refusal,
                # No free slot now (the local backend): said above the button, which would
                # be refused (`notebook_start`).
                "busy": notebook_slots_refusal(allocation.facility, 1) if show_form else None,
                "member": member,
                "idle_minutes": allocation.facility.notebook_idle_minutes,
                "remaining_gpu_hours": (
                    ledger_of(allocation).gpu_hours_remaining if show_form else None
                ),
                "estimate": lambda: _default_estimate(form),
                "timeline": timeline(allocation, sessions),
            },
        }
    ]


def _default_estimate(form: NotebookForm) -> Decimal:
    """The GPU-hours the form's defaults reserve (rendered only when its fragment is missing)."""
    return (
        Decimal(
            NotebookSession.reservation_for(
                gpus=form.fields["gpus"].initial, hours=Decimal(form.fields["hours"].initial)
            )
        )
        / 3600
    )
