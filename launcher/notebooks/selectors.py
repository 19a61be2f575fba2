"""Reads of notebook sessions, scoped to what a user may see (launcher.selectors' rule): members
of the allocation's project, reviewers and staff see its sessions; only the owner opens one."""
from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from allocations.selectors import visible_allocation_rows

from ..selectors import NotVisible, acts_on_all, sees_all
from .models import NotebookSession


def visible_sessions(user: Any) -> QuerySet[NotebookSession]:
    """Sessions on the allocations `user` may see (allocation, facility, project, owner joined)."""
    rows = NotebookSession.objects.select_related(
        "allocation__facility", "allocation__project", "user")
    if not getattr(user, "is_authenticated", False):
        return rows.none()
    if sees_all(user):
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
    return bool(getattr(user, "pk", None)) and (session.user_id == user.pk or acts_on_all(user))


def may_open(user: Any, session: NotebookSession) -> bool:
    """Only the owner opens the session's JupyterLab (the hub enforces it too)."""
    return bool(getattr(user, "pk", None)) and session.user_id == user.pk
