"""Reads of notebook sessions, scoped to what a user may see (launcher.selectors' rule): members
of the allocation's project, reviewers and staff see its sessions; only the owner opens one.
And the project's datasets a session may read (`notebook_datasets`, which a backend's
`notebook_options` calls): the same check as a job's dataset (allocations.policy,
`dataset_refusal`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db.models import QuerySet

from allocations.models import Allocation, Dataset
from allocations.policy import dataset_refusal
from allocations.roles import acts_on_all_projects, sees_all_projects
from allocations.selectors import visible_allocation_rows

from ..backends.contract import PathRefused
from ..selectors import NotVisible
from .models import NotebookSession


def visible_sessions(user: Any) -> QuerySet[NotebookSession]:
    """Sessions on the allocations `user` may see (allocation, facility, project, owner joined)."""
    rows = NotebookSession.objects.select_related(
        "allocation__facility", "allocation__project", "user"
    )
    if not getattr(user, "is_authenticated", False):
        return rows.none()
    if sees_all_projects(user):
        return rows
    return rows.filter(allocation__in=visible_allocation_rows(user).values("pk"))


def session_for(user: Any, session_id: Any) -> NotebookSession:
    """One visible session, or NotVisible (404) whether it exists or not."""
    try:
        pk = int(session_id)
    except (TypeError, ValueError):
        raise NotVisible("Not found.") from None
    found = visible_sessions(user).filter(pk=pk).first()
    if found is None:
        raise NotVisible("Not found.")
    return found


def allocation_sessions(allocation_id: int) -> QuerySet[NotebookSession]:
    """An allocation's sessions, newest first, owner joined (the allocation page's list)."""
    return NotebookSession.objects.filter(allocation_id=allocation_id).select_related("user")


def may_stop(user: Any, session: NotebookSession) -> bool:
    """Its owner or staff stop a session (notebook_stop refuses anyone else)."""
    return bool(getattr(user, "pk", None)) and (
        session.user_id == user.pk or acts_on_all_projects(user)
    )


def may_open(user: Any, session: NotebookSession) -> bool:
    """Only the owner opens the session's JupyterLab (the hub enforces it too)."""
    return bool(getattr(user, "pk", None)) and session.user_id == user.pk


def notebook_datasets(
    *, allocation: Allocation, resolve: Callable[[str], str]
) -> tuple[dict[str, str], dict[str, str]]:
    """The project's registered datasets a notebook session on this allocation may read:
    ({name: resolved absolute path}, {name: why it was left out}). Each passes the same check
    as a job's dataset (allocations.policy `dataset_refusal`: the facility accepts its
    sensitivity tier, its location passes the policy) and is resolved and confined by
    `resolve(location)` (the facility backend's `resolve_data_path` for the project;
    PathRefused leaves it out with the reason, another BackendError propagates). Called by a
    backend's `notebook_options`, outside any transaction."""
    found: dict[str, str] = {}
    left_out: dict[str, str] = {}
    facility = allocation.facility
    for dataset in Dataset.objects.filter(project_id=allocation.project_id).order_by("name"):
        why = dataset_refusal(dataset, facility)
        if why:
            left_out[dataset.name] = why
            continue
        try:
            found[dataset.name] = resolve(dataset.location)
        except PathRefused as refusal:
            left_out[dataset.name] = refusal.message
    return found, left_out
