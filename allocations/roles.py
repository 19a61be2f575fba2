"""Who is who, in one place: every app asks these (allocations, launcher, portal's staff home
and reports, the admin). Nothing else reads `is_staff` or the reviewers' group.

- A *reviewer* (in the `PORTAL_REVIEWERS_GROUP` group, or a superuser) sees every project's
  requests, allocations and work and decides on requests, never on those of a project they
  belong to (`decides_for`).
- *Staff* (`is_staff`, or a superuser) see everything a reviewer sees and act on any project's
  work (cancel a job, activate or retry an allocation); staff who are not reviewers do not
  decide on requests.
- Everyone else sees and acts on the projects they are a member of.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import AbstractUser, AnonymousUser

# The portal's users (auth.User) and the anonymous one: what `request.user` is.
User = AbstractUser | AnonymousUser

_REVIEWER_CACHE = "_is_reviewer"  # the attribute is_reviewer keeps its answer in, on the user


def is_reviewer(user: User | None) -> bool:
    """Reviewers decide on requests (and see everything)."""
    if user is None or not user.is_authenticated:
        return False
    if user.is_superuser:
        return True
    cached = getattr(user, _REVIEWER_CACHE, None)
    if cached is None:
        # Asked on every page (navigation, scoping): one query per request, kept on the user.
        cached = user.groups.filter(name=settings.PORTAL_REVIEWERS_GROUP).exists()
        setattr(user, _REVIEWER_CACHE, cached)
    return cached


def is_staff(user: User | None) -> bool:
    """Research-computing staff: `is_staff` or a superuser."""
    return bool(user is not None and user.is_authenticated and (user.is_staff or user.is_superuser))


def sees_all_projects(user: User | None) -> bool:
    """Reviewers and staff see every project, request, allocation, job and dataset."""
    return is_staff(user) or is_reviewer(user)


def acts_on_all_projects(user: User | None) -> bool:
    """Staff act on any project's work; reviewers who are not staff only see it."""
    return is_staff(user)
