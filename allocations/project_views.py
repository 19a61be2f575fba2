"""The project page: its allocations, requests, datasets and members, where a PI or manager
adds members (by username or email), changes roles and removes them. Thin: each form posts to
one service; refusals become messages."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from core.refusals import refused_to

from . import selectors, services
from .list_selectors import cpu_only
from .models import Allocation, Dataset, ProjectMembership
from .usernames import CLUSTER_USERNAME_HELP, CLUSTER_USERNAME_HTML_PATTERN

if TYPE_CHECKING:
    from django.contrib.auth.models import User as AuthUser


def _datasets(project) -> list:
    """The project's registered datasets (at most 20)."""
    return list(Dataset.objects.filter(project=project).order_by("-pk")[:20])


def _datasets_url(project_id: int) -> str:
    """The project's datasets page."""
    return reverse("project-datasets", args=[project_id])


@login_required
def project_detail(request: HttpRequest, pk: int) -> HttpResponse:
    project = get_object_or_404(
        selectors.visible_projects(request.user).select_related("pi"), pk=pk
    )
    user = request.user
    allocations = list(
        Allocation.objects.filter(project=project)
        .select_related("facility")
        .annotate(cpu_only=cpu_only())  # each row's unit, in the same query
        .order_by("-created_at", "-id")[:50]
    )
    context = {
        "project": project,
        "members": project.memberships.select_related("user").order_by("role", "user__username"),
        "allocations": allocations,
        "requests": selectors.visible_requests(user)
        .filter(project=project)
        .annotate(cpu_only=cpu_only())[:50],
        "can_manage": selectors.can_manage_project(user, project),
        "is_member": selectors.membership(user, project) is not None,
        "roles": ProjectMembership.Role.choices,
        "cluster_pattern": CLUSTER_USERNAME_HTML_PATTERN,
        "cluster_help": CLUSTER_USERNAME_HELP,
        "datasets_url": _datasets_url(project.pk),
        "datasets": _datasets(project),
        "events": selectors.project_history(project),
    }
    return render(request, "allocations/project_detail.html", context)


def _member_action(request: HttpRequest, project, action: str) -> str:
    post, by = request.POST, cast("AuthUser", request.user)  # login_required
    user: AuthUser | None
    if action == "add":
        user = services.user_find(identifier=post.get("username", ""))
        services.project_member_add(
            project=project,
            by=by,
            user=user,
            role=post.get("role") or ProjectMembership.Role.MEMBER,
            cluster_username=post.get("cluster_username", ""),
        )
        return f"{user.get_username()} was added to {project.code}."
    user = get_user_model().objects.filter(username=post.get("username", "")).first()
    if user is None:
        raise services.PolicyError("No such member.", field="username")
    if action == "role":
        services.project_member_role_change(
            project=project, by=by, user=user, role=post.get("role", "")
        )
        return f"{user.get_username()} is now {post.get('role')}."
    services.project_member_remove(project=project, by=by, user=user)
    return f"{user.get_username()} was removed from {project.code}."


@login_required
@require_POST
@refused_to("project-detail", "pk")
def project_members(request: HttpRequest, pk: int, action: str) -> HttpResponse:
    """Add, change the role of, or remove a member; every refusal is a message on the page."""
    if action not in {"add", "role", "remove"}:
        raise Http404
    project = get_object_or_404(selectors.visible_projects(request.user), pk=pk)
    messages.success(request, _member_action(request, project, action))
    if action == "remove" and request.POST.get("username") == request.user.get_username():
        return redirect("dashboard")
    return redirect("project-detail", project.pk)
