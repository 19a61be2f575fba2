"""Project writes."""
from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db import transaction

from ..models import Project, ProjectMembership
from ..selectors import can_manage_project
from ..transitions import record_event
from .errors import PolicyError


@transaction.atomic
def project_create(
    *, by, code: str, title: str, research_area: str, pi_name: str = "", pi_email: str = ""
) -> Project:
    """Create a project led by `by`, who becomes its PI member. Codes are unique."""
    code = code.strip().upper()
    if Project.objects.filter(code=code).exists():
        raise PolicyError(f"A project with code {code} already exists.", field="code")
    project = Project.objects.create(
        code=code, title=title.strip(), research_area=research_area.strip(), pi=by,
        pi_name=pi_name.strip() or by.get_full_name() or by.get_username(),
        pi_email=pi_email.strip() or by.email,
    )
    project.full_clean()
    ProjectMembership.objects.create(project=project, user=by, role=ProjectMembership.Role.PI)
    record_event(project, actor=by, from_state="", to_state="created")
    return project


@transaction.atomic
def project_add_member(
    *, project: Project, by, user, role: str = ProjectMembership.Role.MEMBER,
    cluster_username: str = "",
) -> ProjectMembership:
    """Add (or change the role of) a member. Only the PI, a manager or an admin may."""
    if not can_manage_project(by, project):
        raise PermissionDenied("Only the project's PI or a manager can add members.")
    if role not in ProjectMembership.Role.values:
        raise PolicyError(f"Choose one of {', '.join(ProjectMembership.Role.values)}.", "role")
    membership, _ = ProjectMembership.objects.update_or_create(
        project=project, user=user, defaults={"role": role, "cluster_username": cluster_username}
    )
    record_event(project, actor=by, from_state="", to_state="member_added",
                 comment=f"{user.get_username()} as {role}")
    return membership
