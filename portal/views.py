"""The site shell: dashboard and health check."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from django.contrib.auth.decorators import login_required
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import timezone
from django.utils.functional import SimpleLazyObject

from allocations.alerts import rows_with_burn
from allocations.list_selectors import cpu_only
from allocations.models import Allocation, AllocationRequest, Project
from allocations.roles import sees_all_projects
from allocations.selectors import member_project_ids
from core.versions import fragment_key

from .staff.selectors import staff_home

if TYPE_CHECKING:
    from django.contrib.auth.models import User

# Only the columns the page shows (the ledger's charged seconds are a column of the row); the
# query-count tests catch a template that reaches for a deferred field.
PROJECT_COLUMNS = ("code", "title", "research_area", "pi_name")
REQUEST_COLUMNS = (
    "kind",
    "status",
    "gpu_hours",
    "granted_gpu_hours",
    "updated_at",
    "project__code",
    "facility__name",
)
ALLOCATION_COLUMNS = (
    "kind",
    "status",
    "gpu_hours",
    "start_date",
    "end_date",
    "gpu_seconds_used",
    "budget",
    "spend",
    "project__code",
    "facility__name",
    "facility__alert_thresholds",
)


@login_required
def dashboard(request: HttpRequest) -> HttpResponse:
    """My projects, my recent requests with their status, my allocations with usage bars.
    Reviewers and admins see the staff home here instead (`?view=mine` for their own)."""
    user = cast("User", request.user)  # login_required
    if sees_all_projects(user) and request.GET.get("view") != "mine":
        return render(request, "portal/staff_home.html", staff_home(user))
    ids = member_project_ids(user)
    # The cards are cached as rendered, under the versions of the user's projects that the
    # services bump (core/versions.py): the querysets stay lazy, so a cached card runs
    # no query. The requests card shows ages ("25 min"), so it is kept a minute at most. The
    # allocations' burn rates count whole days before today: the key holds the date.
    allocations = SimpleLazyObject(
        lambda: rows_with_burn(
            Allocation.objects.filter(project_id__in=ids)
            .select_related("project", "facility")
            .only(*ALLOCATION_COLUMNS)
            .annotate(cpu_only=cpu_only())
            .order_by("-created_at", "-id")[:20]
        )
    )
    context = {
        "cards_key": fragment_key(
            "dashboard",
            user.pk,
            user.get_username(),
            user.email,
            timezone.localdate(),
            project_ids=ids,
        ),
        "projects": Project.objects.filter(pk__in=ids).order_by("code").only(*PROJECT_COLUMNS)[:50],
        "requests": AllocationRequest.objects.filter(project_id__in=ids)
        .select_related("project", "facility")
        .only(*REQUEST_COLUMNS)
        .annotate(cpu_only=cpu_only())
        .order_by("-created_at", "-id")[:20],
        "allocations": allocations,
        "notices": SimpleLazyObject(lambda: [n for row in allocations for n in row.notices]),
    }
    return render(request, "portal/dashboard.html", context)


def healthz(request: HttpRequest) -> JsonResponse:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok"})
