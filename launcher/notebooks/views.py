"""Notebook pages: open one from the allocation page, a session's page, stop. Thin: the same
selectors and services as the API (others' sessions and allocations are 404)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from allocations.models import Event
from allocations.selectors import visible_allocations
from core.refusals import form_call, form_status, refused_to

from . import services
from .forms import NotebookForm
from .pages import decorate
from .selectors import session_for


@login_required
def allocation_notebook(request: HttpRequest, pk: int) -> HttpResponse:
    """The "Open a notebook" form (also on the allocation page): `notebook_start`, as POST
    /api/v1/notebooks/. A refusal re-renders the form with it: on its field (400) or at the
    top with the API's status (409: not active, no notebooks here, does not fit; 403)."""
    allocation = get_object_or_404(visible_allocations(request.user), pk=pk)
    form = NotebookForm(request.POST or None, allocation=allocation)
    if request.method == "POST" and form.is_valid():
        session = form_call(
            form,
            services.notebook_start,
            actor=request.user,
            allocation_id=allocation.pk,
            gpus=form.cleaned_data["gpus"],
            hours=form.cleaned_data["hours"],
        )
        if session is not None:
            messages.success(
                request,
                f"Notebook #{session.pk} is starting: it opens from this page once it is running.",
            )
            return redirect("notebook-detail", session.pk)
    return render(
        request,
        "notebooks/open.html",
        {
            "allocation": allocation,
            "form": form,
            "idle_minutes": allocation.facility.notebook_idle_minutes,
            "refusal": services.notebook_refusal(allocation),
            "unit": allocation.facility.unit,  # GPUs, or CPUs where it has no GPUs
        },
        status=form_status(form),
    )


@login_required
def notebook_detail(request: HttpRequest, pk: int) -> HttpResponse:
    session = decorate([session_for(request.user, pk)], request.user)[0]
    events = (
        Event.objects.filter(content_type__app_label="notebooks", object_id=session.pk)
        .select_related("actor")
        .order_by("created_at")[:50]
    )
    return render(
        request,
        "notebooks/detail.html",
        # The unit: GPUs, or CPUs where the facility has no GPUs (allocations/units.py).
        {"session": session, "events": events, "unit": session.allocation.facility.unit},
    )


@login_required
@require_POST
@refused_to("notebook-detail", "pk")
def notebook_stop(request: HttpRequest, pk: int) -> HttpResponse:
    session = services.notebook_stop(actor=request.user, session_id=pk)
    messages.success(request, f"Notebook #{session.pk} is stopping; it is charged what it ran.")
    return redirect("notebook-detail", pk)
