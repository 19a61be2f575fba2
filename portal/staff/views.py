"""The staff home: thin views over portal.staff.selectors and the allocation services."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from allocations import services
from allocations.roles import sees_all_projects
from allocations.selectors import visible_allocations
from core.refusals import refused_to

from .selectors import staff_home as staff_home_data


@login_required
def staff_home(request: HttpRequest) -> HttpResponse:
    """Reviewers' and admins' home; anyone else is refused (403: the page itself is no
    secret, only its content)."""
    if not sees_all_projects(request.user):
        raise PermissionDenied("The staff home is for reviewers and admins.")
    return render(request, "portal/staff_home.html", staff_home_data(request.user))


@login_required
@require_POST
@refused_to("staff-home")
def staff_allocation_action(request: HttpRequest, pk: int, action: str) -> HttpResponse:
    """Activate (manual facility) or retry (failed) one allocation from the staff home."""
    if action not in {"activate", "retry"}:
        raise Http404
    allocation = get_object_or_404(visible_allocations(request.user), pk=pk)
    services.allocation_staff_action(allocation=allocation, by=request.user, action=action)
    verb = "activated" if action == "activate" else "queued for provisioning again"
    messages.success(request, f"Allocation #{allocation.pk} {verb}.")
    return redirect("staff-home")
