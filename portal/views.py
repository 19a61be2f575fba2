"""The site shell: dashboard and health check."""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from allocations.ledger_query import attach_ledger
from allocations.models import Project
from allocations.selectors import is_reviewer, member_project_ids, my_allocations, my_requests

from . import dashboard_rows as rows
from .staff.selectors import staff_home


REQUEST_COLUMNS = ("kind", "status", "gpu_hours", "granted_gpu_hours", "updated_at", "project__code",
                   "facility__name")
ALLOCATION_COLUMNS = ("kind", "status", "gpu_hours", "end_date", "project__code",
                      "facility__name")


@login_required
def dashboard(request: HttpRequest) -> HttpResponse:
    """My projects, my recent requests with their status, my allocations with usage bars.
    Reviewers and admins see the staff home here instead (`?view=mine` for their own)."""
    user = request.user
    if is_reviewer(user) and request.GET.get("view") != "mine":
        return render(request, "portal/staff_home.html", staff_home(user))
    # Only the columns the page shows, and the ledger from its compiled-once statement: most of
    # a dashboard view's time was the ORM compiling (docs/performance.md). The query-count tests
    # catch a template that reaches for a deferred field.
    projects = list(Project.objects.filter(pk__in=member_project_ids(user)).order_by("code")
                    .only("code", "title", "research_area", "pi_name")[:50])
    requests = list(my_requests(user).only(*REQUEST_COLUMNS)[:20])
    allocations = attach_ledger(my_allocations(user).only(*ALLOCATION_COLUMNS)[:20])
    # The rows are rendered in Python (portal/dashboard_rows.py): the template engine's per-row
    # work was most of the page's time.
    context = {"projects": projects, "requests": requests, "allocations": allocations,
               "project_items": rows.project_items(projects),
               "request_rows": rows.request_rows(requests),
               "allocation_rows": rows.allocation_rows(allocations)}
    return render(request, "portal/dashboard.html", context)


def healthz(request: HttpRequest) -> JsonResponse:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok"})
