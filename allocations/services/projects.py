"""Project writes: creation and the member list (add, change role, remove).

Only the project's PI, a manager or an admin may change members; each change is one audited
Event on the project, and after commit `project_members_changed` tells the launcher to mirror
the member list to the backend accounts of the project's allocations (Slurm associations).
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.contenttypes.models import ContentType
from django.db import transaction
from django.utils import timezone

from core.errors import Forbidden, clean_or_invalid

from .. import signals
from ..models import Event, Project, ProjectMembership
from ..roles import is_staff
from ..selectors import can_manage_project
from ..transitions import InvalidTransition, record_event
from ..usernames import CLUSTER_USERNAME_HELP, is_cluster_username
from .errors import PolicyError

if TYPE_CHECKING:
    from django.contrib.auth.models import User as AuthUser

    from ..roles import User

Role = ProjectMembership.Role


class MembershipConflict(InvalidTransition):
    """A member change that would leave the project in a state it must not be in (HTTP 409),
    e.g. without a PI."""

    def __init__(self, membership: ProjectMembership, to_state: str, message: str) -> None:
        super().__init__(membership, membership.role, to_state, message)


@transaction.atomic
def project_create(
    *,
    by: AuthUser,
    code: str,
    title: str,
    research_area: str,
    pi_name: str = "",
    pi_email: str = "",
) -> Project:
    """Create a project led by `by`, who becomes its PI member. Codes are unique. A user who
    is not staff creates at most `PORTAL_PROJECTS_PER_USER_PER_DAY` projects in 24 hours
    (PolicyError: projects are what trials are counted against)."""
    _check_creation_rate(by)
    code = code.strip().upper()
    if Project.objects.filter(code=code).exists():
        raise PolicyError(f"A project with code {code} already exists.", field="code")
    project = Project.objects.create(
        code=code,
        title=title.strip(),
        research_area=research_area.strip(),
        pi=by,
        pi_name=pi_name.strip() or by.get_full_name() or by.get_username(),
        pi_email=pi_email.strip() or by.email,
    )
    clean_or_invalid(project)
    ProjectMembership.objects.create(project=project, user=by, role=Role.PI)
    record_event(project, actor=by, from_state="", to_state="created")
    return project


def _check_creation_rate(by: AuthUser) -> None:
    if is_staff(by):
        return
    # Serialise one user's creations (their row lock), so parallel posts cannot all pass.
    get_user_model().objects.select_for_update().filter(pk=by.pk).first()
    limit = settings.PORTAL_PROJECTS_PER_USER_PER_DAY
    since = timezone.now() - dt.timedelta(days=1)
    created = Event.objects.filter(
        actor=by,
        to_state="created",
        created_at__gte=since,
        content_type=ContentType.objects.get_for_model(Project),
    ).count()
    if created >= limit:
        raise PolicyError(
            f"You can create at most {limit} projects in 24 hours; you have "
            f"created {created}. Try again later, or ask research computing "
            "staff."
        )


PROJECT_EDITABLE = ("title", "research_area", "pi_name", "pi_email")


@transaction.atomic
def project_update(*, project: Project, by: User, **fields: str) -> Project:
    """Edit a project's description (title, research area, PI name and email), audited with
    the fields that changed. Only the PI, a manager or an admin may; the code never changes
    (PolicyError on `code`). Nothing is saved if a value is invalid."""
    if not can_manage_project(by, project):
        raise Forbidden("Only the project's PI or a manager can edit it.")
    code = fields.pop("code", None)
    if code is not None and code.strip().upper() != project.code:
        raise PolicyError("The project code cannot change.", field="code")
    unknown = set(fields) - set(PROJECT_EDITABLE)
    if unknown:
        raise TypeError(f"Unknown project fields: {sorted(unknown)}")
    locked = Project.objects.select_for_update().get(pk=project.pk)
    changes = []
    for key, value in fields.items():
        value = value.strip()
        if getattr(locked, key) != value:
            changes.append(f"{key}: {getattr(locked, key)!r} -> {value!r}")
            setattr(locked, key, value)
    if not changes:
        return locked
    clean_or_invalid(locked)
    locked.save(update_fields=[k for k in fields if k in PROJECT_EDITABLE])
    record_event(locked, actor=by, from_state="", to_state="edited", comment="; ".join(changes))
    return locked


def _check_manager(project: Project, by: User) -> None:
    if not can_manage_project(by, project):
        raise Forbidden("Only the project's PI or a manager can change its members.")


def _check_role(role: str) -> None:
    if role not in Role.values:
        raise PolicyError(f"Choose one of {', '.join(Role.values)}.", field="role")


def _members_changed(project: Project) -> None:
    transaction.on_commit(
        lambda: signals.project_members_changed.send(Project, project_id=project.pk)
    )


def _cluster_username(user: AuthUser, given: str) -> str:
    """The member's login on HPC facilities: as given, else the portal username when it is a
    valid login name (most sites use the same one), else none (no Slurm association)."""
    given = (given or "").strip()
    if given:
        if not is_cluster_username(given):
            raise PolicyError(CLUSTER_USERNAME_HELP, field="cluster_username")
        return given
    name = user.get_username()
    return name if is_cluster_username(name) else ""


def user_find(*, identifier: str) -> AuthUser:
    """The active user with this username or (unique) email, or a PolicyError on `username`."""
    identifier = (identifier or "").strip()
    if not identifier:
        raise PolicyError("Give the username or email of the person to add.", field="username")
    users = get_user_model().objects.filter(is_active=True)
    user = users.filter(username=identifier).first()
    if user is None and "@" in identifier:
        matches = list(users.filter(email__iexact=identifier)[:2])
        user = matches[0] if len(matches) == 1 else None
    if user is None:
        raise PolicyError(
            f"No user {identifier!r}: ask them to log in once, then add them by username or email.",
            field="username",
        )
    return user


@transaction.atomic
def project_member_add(
    *,
    project: Project,
    by: AuthUser,
    user: AuthUser,
    role: str = Role.MEMBER,
    cluster_username: str = "",
) -> ProjectMembership:
    """Add a member (PI, manager or admin only). Someone already a member is a 400 on
    `username` (change their role instead). Audited; backend accounts follow after commit."""
    _check_manager(project, by)
    _check_role(role)
    if role == Role.PI and not by.is_superuser and not _is_pi(by, project):
        raise Forbidden("Only a PI can make someone else a PI.")
    Project.objects.select_for_update().filter(pk=project.pk).first()
    if ProjectMembership.objects.filter(project=project, user=user).exists():
        raise PolicyError(
            f"{user.get_username()} is already a member; change their role instead.",
            field="username",
        )
    membership = ProjectMembership.objects.create(
        project=project,
        user=user,
        role=role,
        cluster_username=_cluster_username(user, cluster_username),
    )
    record_event(
        project,
        actor=by,
        from_state="",
        to_state="member_added",
        comment=f"{user.get_username()} as {role}",
    )
    _members_changed(project)
    return membership


def _is_pi(user: AuthUser | int | None, project: Project) -> bool:
    return ProjectMembership.objects.filter(project=project, user=user, role=Role.PI).exists()


def _locked_membership(project: Project, user: AuthUser) -> ProjectMembership:
    Project.objects.select_for_update().filter(pk=project.pk).first()
    membership = ProjectMembership.objects.filter(project=project, user=user).first()
    if membership is None:
        raise PolicyError(
            f"{user.get_username()} is not a member of {project.code}.", field="username"
        )
    return membership


def _check_keeps_a_pi(membership: ProjectMembership, to: str) -> None:
    if membership.role != Role.PI:
        return
    others = ProjectMembership.objects.filter(
        project_id=membership.project_id, role=Role.PI
    ).exclude(pk=membership.pk)
    if not others.exists():
        raise MembershipConflict(
            membership,
            to,
            "A project needs a PI: make someone else PI before this one leaves or changes role.",
        )


@transaction.atomic
def project_member_role_change(
    *, project: Project, by: AuthUser, user: AuthUser, role: str
) -> ProjectMembership:
    """Change a member's role (PI, manager or admin only; only a PI makes or unmakes PIs). The
    last PI cannot step down (409). Audited."""
    _check_manager(project, by)
    _check_role(role)
    membership = _locked_membership(project, user)
    if role == membership.role:
        return membership
    if Role.PI in (role, membership.role) and not by.is_superuser and not _is_pi(by, project):
        raise Forbidden("Only a PI can make or unmake PIs.")
    _check_keeps_a_pi(membership, role)
    old = membership.role
    ProjectMembership.objects.filter(pk=membership.pk).update(role=role)
    membership.role = role
    if role == Role.PI and project.pi_id != user.pk and not _is_pi(project.pi, project):
        Project.objects.filter(pk=project.pk).update(pi=user)
    record_event(
        project,
        actor=by,
        from_state=old,
        to_state="member_role_changed",
        comment=f"{user.get_username()}: {old} -> {role}",
    )
    return membership


@transaction.atomic
def project_member_remove(*, project: Project, by: AuthUser, user: AuthUser) -> None:
    """Remove a member (PI, manager or admin; anyone may leave by themselves). A manager cannot
    remove a PI, and the last PI cannot leave (409). Audited; after commit the member's backend
    associations are removed, so they can no longer submit on the project's accounts."""
    if by.pk != user.pk:
        _check_manager(project, by)
    membership = _locked_membership(project, user)
    if (
        membership.role == Role.PI
        and by.pk != user.pk
        and not by.is_superuser
        and not _is_pi(by, project)
    ):
        raise Forbidden("Only a PI can remove a PI.")
    _check_keeps_a_pi(membership, "removed")
    if project.pi_id == user.pk:
        successor = (
            ProjectMembership.objects.filter(project=project, role=Role.PI)
            .exclude(pk=membership.pk)
            .order_by("added_at")
            .first()
        )
        if successor is not None:  # _check_keeps_a_pi made sure there is one
            Project.objects.filter(pk=project.pk).update(pi=successor.user_id)
    membership.delete()
    record_event(
        project,
        actor=by,
        from_state=membership.role,
        to_state="member_removed",
        comment=user.get_username(),
    )
    _members_changed(project)


def project_members_sync_record(*, project_id: int, refused: dict[int, str]) -> None:
    """Record the backend account sync's per-member outcome: `refused` maps a membership id to
    why its login could not be mirrored (kept on the membership, audited once on the project,
    listed on the staff home); the project's other members are cleared. Called by the
    launcher after each sync; the next sync retries every member."""
    with transaction.atomic():
        for pk, message in refused.items():
            changed = (
                ProjectMembership.objects.filter(pk=pk, project_id=project_id)
                .exclude(sync_error=message[:300])
                .select_related("project", "user")
                .first()
            )
            if changed is None:
                continue
            ProjectMembership.objects.filter(pk=pk).update(sync_error=message[:300])
            record_event(
                changed.project,
                actor=None,
                from_state="",
                to_state="member_sync_failed",
                comment=f"{changed.user.get_username()}: {message}",
            )
        (
            ProjectMembership.objects.filter(project_id=project_id)
            .exclude(pk__in=list(refused))
            .exclude(sync_error="")
            .update(sync_error="")
        )
