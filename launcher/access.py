"""Who may see and who may act on launcher work: one rule, used by every selector and service.

- Members of a project see its allocations, jobs and sweeps, and act on them (launch, cancel,
  resume, read logs).
- Reviewers and staff see everyone's work; only staff (`is_staff`, and superusers) act on
  others' work.
- Everyone else does not know the work exists: the services raise `NotVisible`, which the API
  and the pages answer with 404 exactly as for an id that does not exist.
- Someone who may see but not act (a reviewer who is not a member) gets `Forbidden`:
  403 in the API, a message on the page (docs/api.md, "Who may do what").
"""
from __future__ import annotations

from typing import Any

from allocations.errors import Forbidden, NotFound
from allocations.models import Allocation
from allocations.roles import acts_on_all_projects, sees_all_projects
from allocations.selectors import is_member


class NotVisible(NotFound):
    """The object is not there for this user (HTTP 404; never says whether it exists)."""


def sees_all(user: Any) -> bool:
    """Reviewers and staff see every project's work (allocations.roles, the one definition
    every app uses)."""
    return sees_all_projects(user)


def acts_on_all(user: Any) -> bool:
    """Staff (and superusers) may act on any project's work."""
    return acts_on_all_projects(user)


def can_see(user: Any, allocation: Allocation) -> bool:
    return sees_all(user) or is_member(user, allocation.project_id)


def can_act(user: Any, allocation: Allocation) -> bool:
    return acts_on_all(user) or is_member(user, allocation.project_id)


def check_can_act(user: Any, allocation: Allocation, *, what: str) -> None:
    """Raise NotVisible (404) if `user` may not see the allocation's work, Forbidden
    (403) if they may see it but not `what` (e.g. "cancel this job")."""
    if user is None or not can_see(user, allocation):
        raise NotVisible("Not found.")
    if not can_act(user, allocation):
        raise Forbidden(f"Only members of the project (or staff) can {what}.")


def check_can_see(user: Any, allocation: Allocation) -> None:
    """Raise NotVisible (404) unless `user` may see the allocation's work."""
    if user is None or not can_see(user, allocation):
        raise NotVisible("Not found.")
