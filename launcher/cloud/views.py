"""The cluster page: nodes, tasks, interruptions and spend."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from .pages import cost_per_day
from .selectors import cluster_interruptions, remaining, visible_clusters


@login_required
def cluster_detail(request: HttpRequest, pk: int) -> HttpResponse:
    cluster = get_object_or_404(visible_clusters(request.user), pk=pk)
    return render(
        request,
        "cloud/cluster_detail.html",
        {
            "cluster": cluster,
            "interruptions": cluster_interruptions(cluster),
            "left": remaining(cluster.allocation),
            "cost": cost_per_day(cluster.allocation),
        },
    )
