"""The site shell: dashboard and health check."""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from allocations.selectors import visible_allocations, visible_projects, visible_requests


@login_required
def dashboard(request: HttpRequest) -> HttpResponse:
    """My projects, my recent requests with their status, my allocations with usage bars."""
    user = request.user
    mine = visible_projects(user).filter(memberships__user=user)
    context = {
        "projects": mine.order_by("code")[:50],
        "requests": visible_requests(user).filter(project__memberships__user=user)[:20],
        "allocations": visible_allocations(user).filter(project__memberships__user=user)
        .order_by("-created_at")[:20],
    }
    return render(request, "portal/dashboard.html", context)


def healthz(request: HttpRequest) -> JsonResponse:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok"})
