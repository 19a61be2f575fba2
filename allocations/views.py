"""Browser pages for requests, review and allocations. Thin: they call the same services as
the API and turn refusals into messages on the page."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.timezone import get_current_timezone_name
from django.utils.translation import get_language
from django.views.decorators.http import require_POST

from core import form_tokens
from core.bounds import COUNT_MAX
from core.refusals import form_call, refused_to
from core.versions import fragment_key

from . import selectors, services
from .alerts import notices
from .burn import allocation_burn
from .charts import PROJECTION_LABEL, cached_allocation_charts
from .connection import connection_note
from .forms import NewRequestForm, RequestForm, initial_from_query
from .ledger import ledger_of
from .list_selectors import cpu_only
from .models import Allocation, AllocationRequest
from .services.requests import review_refusal


@login_required
def request_new(request: HttpRequest) -> HttpResponse:
    """The request form; query parameters pre-fill it (from onboarding or the recommender). Its
    one-time token makes a second POST of the same form (Back and Submit again, a double click)
    go to the request the first one made instead of making another (core/form_tokens.py)."""
    if request.method == "POST":
        form = NewRequestForm(request.POST, user=request.user)
        with transaction.atomic():  # the token's claim holds until the request is made
            once = form_tokens.claim(
                request, scope=REQUEST_FORM, token=request.POST.get(form_tokens.FIELD)
            )
            if once.made is not None:
                messages.info(request, f"This request was already submitted (#{once.made}).")
                return redirect("request-detail", once.made)
            if once.unknown:
                form.renew_token(form_tokens.issue(request, scope=REQUEST_FORM))
                form.is_valid()  # its own errors too, so one look shows all
                form.add_error(None, STALE_FORM)
            elif form.is_valid():
                data = dict(form.cleaned_data)
                project = data.pop("project")
                data.pop(form_tokens.FIELD)
                req = form_call(
                    form,
                    services.request_create,
                    by=request.user,
                    project=project,
                    submit="save_draft" not in request.POST,
                    **data,
                )
                if req is not None:
                    form_tokens.spend(request, once, made=req.pk)
                    messages.success(request, _created_message(req))
                    return redirect("request-detail", req.pk)
    else:
        initial = initial_from_query(request.GET, request.user)
        initial[form_tokens.FIELD] = form_tokens.issue(request, scope=REQUEST_FORM)
        form = NewRequestForm(initial=initial, user=request.user)
    return render(request, "allocations/request_form.html", {"form": form, "editing": None})


REQUEST_FORM = "request-new"  # the scope of the new-request form's tokens
STALE_FORM = (
    "This form was opened in another session or too long ago, so nothing was sent. Check "
    "Requests for it, and submit again if it is not there."
)


def _created_message(req: AllocationRequest) -> str:
    if req.status == AllocationRequest.Status.APPROVED:
        return "Your trial was approved automatically. The allocation is being set up."
    if req.status == AllocationRequest.Status.SUBMITTED:
        return "Request submitted. Reviewers have been notified."
    return "Draft saved. Submit it when it is ready."


@login_required
def request_edit(request: HttpRequest, pk: int) -> HttpResponse:
    req = get_object_or_404(selectors.visible_requests(request.user), pk=pk)
    if not req.is_editable:
        messages.error(request, f"A {req.get_status_display().lower()} request cannot be edited.")
        return redirect("request-detail", req.pk)
    form = RequestForm(request.POST or None, instance=req, user=request.user)
    if request.method == "POST" and form.is_valid():
        data = {k: v for k, v in form.cleaned_data.items() if k != "project"}
        saved = form_call(
            form,
            _update_and_submit,
            req=req,
            by=request.user,
            data=data,
            submit="save_draft" not in request.POST,
        )
        if saved is not None:
            messages.success(request, _created_message(saved))
            return redirect("request-detail", saved.pk)
    return render(request, "allocations/request_form.html", {"form": form, "editing": req})


def _update_and_submit(
    *, req: AllocationRequest, by, data: dict, submit: bool
) -> AllocationRequest:
    req = services.request_update(request=req, by=by, **data)
    if submit:
        services.request_submit(request=req, by=by)
    return req


@login_required
def request_detail(request: HttpRequest, pk: int) -> HttpResponse:
    req = get_object_or_404(selectors.visible_requests(request.user), pk=pk)
    user = request.user
    refusal = review_refusal(req, user)
    context = {
        "req": req,
        "facility_note": connection_note(req.facility),
        "events": selectors.timeline(req),
        "can_edit": req.is_editable
        and (req.requested_by_id == user.pk or selectors.can_manage_project(user, req.project)),
        "can_review": req.status == AllocationRequest.Status.SUBMITTED and not refusal,
        "review_refusal": refusal if selectors.is_reviewer(user) else "",
    }
    return render(request, "allocations/request_detail.html", context)


ACTIONS = {
    "submit": lambda req, user, post: services.request_submit(request=req, by=user),
    "withdraw": lambda req, user, post: services.request_withdraw(
        request=req, by=user, comment=post.get("comment", "")
    ),
    "approve": lambda req, user, post: services.request_approve(
        request=req,
        by=user,
        gpu_hours=_int_or_none(post.get("gpu_hours")),
        comment=post.get("comment", ""),
    ),
    "reject": lambda req, user, post: services.request_reject(
        request=req, by=user, comment=post.get("comment", "")
    ),
    "request-changes": lambda req, user, post: services.request_request_changes(
        request=req, by=user, comment=post.get("comment", "")
    ),
}


class ApproveForm(forms.Form):
    """The approve button's GPU-hours: blank for "as requested", else a whole number (Django
    parses it: "²" passes `str.isdigit()` but is no number)."""

    gpu_hours = forms.IntegerField(required=False, min_value=0, max_value=COUNT_MAX)


def _int_or_none(raw: str | None) -> int | None:
    form = ApproveForm({"gpu_hours": (raw or "").strip()})
    if not form.is_valid():
        raise services.PolicyError({k: [str(m) for m in v] for k, v in form.errors.items()})
    return form.cleaned_data["gpu_hours"]


# What the workflow did, in words ("Request #4 was sent back for changes", never "is now
# changes requested").
MOVED = {
    "draft": "is a draft again",
    "submitted": "was submitted",
    "approved": "was approved",
    "rejected": "was rejected",
    "changes_requested": "was sent back for changes",
    "withdrawn": "was withdrawn",
}


@login_required
@require_POST
@refused_to("request-detail", "pk")
def request_action(request: HttpRequest, pk: int, action: str) -> HttpResponse:
    """One workflow move from a button on the detail page; refusals become messages there."""
    if action not in ACTIONS:
        raise Http404
    req = get_object_or_404(selectors.visible_requests(request.user), pk=pk)
    ACTIONS[action](req, request.user, request.POST)
    req.refresh_from_db()
    messages.success(request, f"Request #{req.pk} {MOVED.get(req.status, 'was updated')}.")
    if action in {"approve", "reject", "request-changes"}:
        return redirect("review-queue")
    return redirect("request-detail", req.pk)


@login_required
def review_queue(request: HttpRequest) -> HttpResponse:
    if not selectors.is_reviewer(request.user):
        raise PermissionDenied("Only reviewers can see the review queue.")
    queue = selectors.review_queue(request.user).annotate(cpu_only=cpu_only())  # each row's unit
    return render(
        request, "allocations/review_queue.html", {"queue": queue[:200], "total": queue.count()}
    )


def history_key(allocation: Allocation) -> str:
    """The cache key of the allocation page's history as rendered: its events are written only
    by `record_event`, which bumps the project's version; they show their actors' usernames
    (the people version) in the server's time zone and the page's language."""
    return fragment_key(
        "allocation-history",
        allocation.pk,
        get_current_timezone_name(),
        get_language(),
        project_ids=[allocation.project_id],
        people=True,
    )


def allocation_page(request: HttpRequest, pk: int) -> dict[str, Any]:
    """The allocation's own part of its page /allocations/<id>/ (a 404 for those who may not
    see it): its ledger, burn rate and projection (with their notices), charts, history and
    the requests that change it. The page is served
    by launcher.views.allocation_detail, which adds the launcher's sections below these
    (`extra_sections`) and renders allocations/allocation_detail.html."""
    allocation = selectors.visible_allocation(request.user, pk)
    if allocation is None:
        raise Http404("No allocation matches the given query.")
    convert_url = None
    if allocation.kind == "trial" and allocation.status in ("active", "exhausted"):
        convert_url = reverse("request-new") + (
            f"?kind=full&purpose=trial_conversion&extends={allocation.pk}"
            f"&facility={allocation.facility.slug}&project={allocation.project_id}"
            + (f"&node_type={allocation.node_type_id}" if allocation.node_type_id else "")
        )
    unit = allocation.facility.unit  # GPU-hours, or CPU-hours where it has no GPUs
    change_urls = {}
    if selectors.is_member(request.user, allocation.project_id):
        purposes = {
            "extension": "Extend the end date",
            "top_up": f"Ask for more {unit.hours}",
            "renewal": "Renew for a new period",
            "closure": "Close early",
        }
        if allocation.status == "closed":
            purposes = {"renewal": purposes["renewal"]}
        change_urls = {
            label: reverse("request-new") + f"?purpose={purpose}&extends={allocation.pk}"
            for purpose, label in purposes.items()
        }
    burn = allocation_burn(allocation)
    context: dict[str, Any] = {
        "allocation": allocation,
        "burn": burn,
        "notices": notices(allocation, burn),
        "projection_label": PROJECTION_LABEL,
        "change_urls": change_urls,
        # Read only when the cached history is missing (a callable: the template calls it).
        "events": lambda: selectors.timeline_events(allocation),
        "history_key": history_key(allocation),
        "charts": cached_allocation_charts(allocation, burn),
        "convert_url": convert_url,
        "ledger": ledger_of(allocation),
        "unit": unit,
    }
    return context
