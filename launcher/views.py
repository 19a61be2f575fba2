"""Browser pages for jobs and sweeps. Thin: selectors to read (others' objects are 404), the
same services as the API to act. The job page updates itself by polling the JSON API when
JavaScript runs, and is complete without it."""
from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from allocations.transitions import InvalidTransition

from allocations.selectors import visible_allocations

from . import charts, selectors, services
from .backends.base import BackendError
from .forms import LaunchForm
from .services import LaunchConflict


@login_required
def job_detail(request: HttpRequest, pk: int) -> HttpResponse:
    job = get_object_or_404(selectors.visible_jobs(request.user), pk=pk)
    return render(request, "launcher/job_detail.html", {
        "job": job, "loss": charts.loss_figure(job), "progress": job.progress or {},
        "can_cancel": not job.is_final and selectors.launchable_allocations(request.user)
        .filter(pk=job.allocation_id).exists()})


@login_required
@require_POST
def job_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    job = get_object_or_404(selectors.visible_jobs(request.user), pk=pk)
    if not selectors.launchable_allocations(request.user).filter(pk=job.allocation_id).exists():
        messages.error(request, "Only members of the project can cancel its jobs.")
        return redirect("job-detail", pk)
    try:
        services.job_cancel(job=job, by=request.user)
    except (InvalidTransition, BackendError) as error:
        messages.error(request, str(error))
    else:
        messages.success(request, f"Job #{job.pk} cancelled.")
    return redirect("job-detail", pk)


@login_required
def sweep_detail(request: HttpRequest, pk: int) -> HttpResponse:
    sweep = get_object_or_404(selectors.visible_sweeps(request.user), pk=pk)
    board = selectors.sweep_leaderboard(sweep)
    counts = selectors.sweep_counts(sweep)
    finished = sum(counts[s] for s in ("succeeded", "failed", "cancelled", "timeout"))
    return render(request, "launcher/sweep_detail.html", {
        "sweep": sweep, "counts": counts, "finished": finished, "board": board[:100],
        "figure": charts.leaderboard_figure(board, sweep.sort_by),
        "cells": sweep.jobs.order_by("array_index").only(
            "pk", "array_index", "state", "params", "state_reason", "progress")[:200]})


@login_required
def allocation_launch(request: HttpRequest, pk: int) -> HttpResponse:
    """The launch form of an allocation (also shown on its page): the same `job_launch` service
    as POST /api/v1/jobs/. Field errors re-render the form; a refusal (the API's 409: not active,
    not enough GPU-hours left) goes back to the allocation page as a message."""
    allocation = get_object_or_404(visible_allocations(request.user), pk=pk)
    if not selectors.launchable_allocations(request.user).filter(pk=pk).exists():
        messages.error(request, "Only members of the project can launch jobs on its allocations.")
        return redirect(f"/allocations/{pk}/")
    form = LaunchForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            job = services.job_launch(by=request.user, allocation=allocation, gpus=data["gpus"],
                                      wall_time_minutes=data["wall_time_minutes"],
                                      params=data["params"])
        except LaunchConflict as error:
            messages.error(request, error.message)
            return redirect(f"/allocations/{pk}/")
        messages.success(request, f"Job #{job.pk} launched; it is being submitted.")
        return redirect("job-detail", job.pk)
    return render(request, "launcher/launch.html", {"allocation": allocation, "form": form},
                  status=400 if form.is_bound else 200)

