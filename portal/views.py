"""The site shell: dashboard and health check."""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from allocations.models import Project
from allocations.selectors import member_project_ids, my_allocations, my_requests


@login_required
def dashboard(request: HttpRequest) -> HttpResponse:
    """My projects, my recent requests with their status, my allocations with usage bars."""
    user = request.user
    context = {
        "projects": Project.objects.filter(pk__in=member_project_ids(user)).order_by("code")[:50],
        "requests": my_requests(user)[:20],
        "allocations": my_allocations(user)[:20],
    }
    return render(request, "portal/dashboard.html", context)


def healthz(request: HttpRequest) -> JsonResponse:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok"})
