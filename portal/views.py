"""The site shell: dashboard and health check."""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from allocations.roles import sees_all_projects
from allocations.selectors import member_project_ids

from . import dashboard_rows as rows
from .staff.selectors import staff_home


@login_required
def dashboard(request: HttpRequest) -> HttpResponse:
    """My projects, my recent requests with their status, my allocations with usage bars.
    Reviewers and admins see the staff home here instead (`?view=mine` for their own)."""
    user = request.user
    if sees_all_projects(user) and request.GET.get("view") != "mine":
        return render(request, "portal/staff_home.html", staff_home(user))
    # Rows from statements compiled once, rendered in Python (portal/dashboard_rows.py): the
    # ORM's compiling and the template engine's per-row work were most of the page's time.
    tables = rows.tables(member_project_ids(user))
    context = {"projects": tables.counts["projects"], "requests": tables.counts["requests"],
               "allocations": tables.counts["allocations"], "project_items": tables.projects,
               "request_rows": tables.requests, "allocation_rows": tables.allocations}
    return render(request, "portal/dashboard.html", context)


def healthz(request: HttpRequest) -> JsonResponse:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok"})
