"""Browser pages for jobs and sweeps. Thin: selectors to read (others' objects are 404), the
same services as the API to act. The job page updates itself by polling the JSON API when
JavaScript runs, and is complete without it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import F
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from allocations.models import Allocation
from allocations.selectors import visible_allocations
from allocations.views import allocation_page
from core.refusals import form_call, form_status, refused_to

from . import charts, selectors, services, sweep_selectors, sweepgrid
from . import params as P
from .backends.contract import BackendError
from .estimates import capacity_note
from .forms import LaunchForm, SweepForm
from .heartbeat import queue_notice
from .models import Job
from .pages import allocation_page_sections
from .selectors import Reservation, with_reservation
from .services import placement as placing

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations


@login_required
def allocation_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """/allocations/<id>/: the allocation's own page (allocations.views.allocation_page; a 404
    for those who may not see it) with the launcher's sections below it (launcher/pages.py)."""
    context = allocation_page(request, pk)
    context["extra_sections"] = allocation_page_sections(context["allocation"], request.user)
    return render(request, "allocations/allocation_detail.html", context)


@login_required
def job_detail(request: HttpRequest, pk: int) -> HttpResponse:
    # get_object_or_404 drops the queryset's annotations from the type: named again here.
    job: WithAnnotations[Job, Reservation] = get_object_or_404(
        with_reservation(selectors.visible_jobs(request.user)), pk=pk
    )
    return render(
        request,
        "launcher/job_detail.html",
        {
            "job": job,
            "reserved_hours": job.reserved_seconds / 3600,
            "loss": charts.loss_figure(job),
            "progress": job.progress or {},
            "panel": charts.metrics_panel(job),
            "roc": charts.roc_figure(job),
            "can_cancel": not job.is_final and selectors.can_act(request.user, job.allocation),
            "can_rerun": selectors.can_act(request.user, job.allocation),
            "queue_notice": queue_notice(job),
            "wall_time_rule": {"margin": P.WALL_TIME_MARGIN, "floor": P.WALL_TIME_FLOOR_MINUTES},
            "unit": job.allocation.facility.unit,  # GPUs, or CPUs where it has no GPUs
        },
    )


@login_required
@require_POST
@refused_to("job-detail", "pk", also=(BackendError,))  # the cluster could not be told: say so
def job_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    job = get_object_or_404(selectors.visible_jobs(request.user), pk=pk)
    services.job_cancel(job=job, by=request.user)
    messages.success(request, f"Job #{job.pk} cancelled.")
    return redirect("job-detail", pk)


@login_required
@require_POST
@refused_to("job-detail", "pk", prefix="Not run again: ")
def job_rerun(request: HttpRequest, pk: int) -> HttpResponse:
    job = get_object_or_404(selectors.visible_jobs(request.user), pk=pk)
    again = services.job_rerun(job=job, by=request.user)
    messages.success(
        request, f"Job #{again.pk} runs job #{job.pk} again, with the same parameters and seed."
    )
    return redirect("job-detail", again.pk)


@login_required
@require_POST
@refused_to("sweep-detail", "pk", also=(BackendError,))  # the cluster could not be told: say so
def sweep_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    """Cancel every unfinished cell of a sweep: the same `sweep_cancel` service as
    POST /api/v1/sweeps/{id}/cancel/ (a finished sweep: refused, said at the top)."""
    sweep = get_object_or_404(selectors.visible_sweeps(request.user), pk=pk)
    cancelled = services.sweep_cancel(sweep=sweep, by=request.user)
    messages.success(
        request, f"Sweep #{sweep.pk} cancelled: {cancelled} cell{'s' if cancelled != 1 else ''}."
    )
    return redirect("sweep-detail", pk)


@login_required
def sweep_detail(request: HttpRequest, pk: int) -> HttpResponse:
    sweep = get_object_or_404(selectors.visible_sweeps(request.user), pk=pk)
    board = sweep_selectors.sweep_leaderboard(sweep)
    counts = sweep_selectors.sweep_counts(sweep)
    schedule = sweep_selectors.sweep_schedule(sweep)
    finished = sum(counts[s] for s in Job.FINAL)
    done = sweep_selectors.sweep_finished(sweep, counts)
    outcome, outcome_label = sweep_selectors.sweep_outcome(counts, done=done)
    return render(
        request,
        "launcher/sweep_detail.html",
        {
            "sweep": sweep,
            "counts": counts,
            "finished": finished,
            # A staged sweep may end below its size (configurations stopped, a search's budget).
            "done": done,
            "outcome": outcome,
            "outcome_label": outcome_label,
            "schedule": schedule,
            "charged": selectors.sweep_gpu_seconds(sweep),
            "board": board[:100],
            "figure": charts.leaderboard_figure(board, sweep.sort_by),
            # Early stopping: the validation metric per configuration over epochs (one query).
            "epochs_figure": charts.sweep_epochs_figure(
                sweep.jobs.order_by("array_index").values(
                    "params",
                    epoch_metrics=F("progress__epoch_metrics"),
                    history=F("metrics__history"),
                ),
                schedule,
            )
            if schedule
            else None,
            "capacity": capacity_note(sweep.allocation.facility, concurrency=sweep.concurrency),
            "can_cancel": not done and selectors.can_act(request.user, sweep.allocation),
            "unit": sweep.allocation.facility.unit,  # GPUs, or CPUs where it has no GPUs
            "cells": sweep.jobs.order_by("array_index").only(
                "pk",
                "sweep_id",
                "array_index",
                "state",
                "params",
                "state_reason",
                "progress",
                "stopped_at_epoch",
            )[:200],
        },
    )


def _member_allocation(request: HttpRequest, pk: int) -> Allocation | None:
    """The allocation if the user may launch on it; else None with a message (others': 404)."""
    allocation = get_object_or_404(visible_allocations(request.user), pk=pk)
    if not selectors.can_act(request.user, allocation):
        messages.error(
            request, "Only members of the project (or staff) can launch jobs on its allocations."
        )
        return None
    return allocation


@login_required
def allocation_launch(request: HttpRequest, pk: int) -> HttpResponse:
    """The launch form of an allocation (also shown on its page): the same `job_launch` service
    as POST /api/v1/jobs/. A refusal re-renders the form with it (core.refusals): on its
    field (400), or at the top with the API's status (409: not active, not enough GPU-hours
    left; 400: no price for that many GPUs on a cloud). "Place it for me" launches on the
    project's allocation predicted to finish first instead (`job_launch_placed`)."""
    allocation = _member_allocation(request, pk)
    if allocation is None:
        return redirect(f"/allocations/{pk}/")
    form = LaunchForm(request.POST or None, allocation=allocation)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        job = (
            form_call(
                form,
                placing.job_launch_placed,
                by=request.user,
                work=placing.Work(
                    params=data["params"],
                    gpus=data["gpus"],
                    wall_time_minutes=data["wall_time_minutes"],
                ),
                project_id=allocation.project_id,
            )
            if data.get("place")
            else form_call(
                form,
                services.job_launch,
                by=request.user,
                allocation=allocation,
                gpus=data["gpus"],
                wall_time_minutes=data["wall_time_minutes"],
                params=data["params"],
            )
        )
        if job is not None:
            messages.success(request, f"Job #{job.pk} launched.")
            return redirect("job-detail", job.pk)
    return render(
        request,
        "launcher/launch.html",
        {"allocation": allocation, "form": form},
        status=form_status(form),
    )


@login_required
def allocation_sweep(request: HttpRequest, pk: int) -> HttpResponse:
    """The sweep form of an allocation (also on its page), the same `sweep_launch` service as
    POST /api/v1/sweeps/. "Estimate" (or `?preset=claire` to fill in the CLAIRE grid) shows the
    total before anything launches; "Launch sweep" launches (with "Place it for me", on the
    project's allocation predicted to finish it first: `sweep_launch_placed`); a refusal is on
    the form (409 when the allocation cannot take it, 400 when it cannot be priced)."""
    allocation = _member_allocation(request, pk)
    if allocation is None:
        return redirect(f"/allocations/{pk}/")
    preset = request.GET.get("preset")
    initial = SweepForm.preset_initial(preset) if preset in sweepgrid.PRESETS else None
    form = SweepForm(request.POST or None, allocation=allocation, initial=initial)
    estimate = None
    if not form.is_bound and initial:
        form = SweepForm(initial_data(form), allocation=allocation)
    if form.is_bound and form.is_valid():
        v = form.cleaned_data["validated"]
        estimate = form_call(
            form,
            selectors.sweep_estimate,
            allocation=allocation,
            grid=v["grid"],
            params=v["params"],
            gpus=v["gpus"],
            wall_time_minutes=v["wall_time_minutes"],
            concurrency=v["concurrency"],
        )
        if estimate is not None and request.method == "POST" and "launch" in request.POST:
            sweep = (
                form_call(
                    form,
                    placing.sweep_launch_placed,
                    by=request.user,
                    work=placing.Work(
                        params=v["params"],
                        gpus=v["gpus"],
                        wall_time_minutes=v["wall_time_minutes"],
                        grid=v["grid"],
                        concurrency=v["concurrency"],
                    ),
                    name=v["name"],
                    project_id=allocation.project_id,
                )
                if form.cleaned_data.get("place")
                else form_call(
                    form,
                    services.sweep_launch,
                    by=request.user,
                    allocation=allocation,
                    grid=v["grid"],
                    gpus=v["gpus"],
                    wall_time_minutes=v["wall_time_minutes"],
                    params=v["params"],
                    concurrency=v["concurrency"],
                    name=v["name"],
                )
            )
            if sweep is not None:
                messages.success(request, f"Sweep #{sweep.pk} launched: {sweep.size} runs.")
                return redirect("sweep-detail", sweep.pk)
    return render(
        request,
        "launcher/sweep_form.html",
        {"allocation": allocation, "form": form, "estimate": estimate},
        status=form_status(form),
    )


def initial_data(form: SweepForm) -> dict:
    """A preset's initial values as submitted data, so its estimate shows at once."""
    data = {name: form.get_initial_for_field(field, name) for name, field in form.fields.items()}
    return {k: v for k, v in data.items() if v is not None}
