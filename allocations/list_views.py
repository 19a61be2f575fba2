"""The list pages: /requests/ (the requests one may see) and /allocations/ (the allocations),
newest first, 50 a page, filtered by status. Each is three queries whatever the number of rows
(the user's projects, the count, the page); the rows are `allocations/list_selectors.py`'s."""

from __future__ import annotations

from typing import Any, cast

from django import forms
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import QuerySet, TextChoices
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render

from . import list_selectors
from .models import Allocation, AllocationRequest
from .selectors import User

PAGE_SIZE = 50


class StatusFilter(forms.Form):
    """`?status=`: one of the model's statuses, or blank for all."""

    status = forms.ChoiceField(required=False, label="Status")

    def __init__(
        self,
        data: QueryDict,
        *,
        statuses: type[TextChoices],
        more: tuple[tuple[str, str], ...] = (),
    ) -> None:
        super().__init__(data)
        field = self.fields["status"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [("", "All"), *statuses.choices, *more]
        self.labels = {**dict(statuses.choices), **dict(more)}

    def chosen(self) -> str:
        """The status asked for; blank (all) when it is none of the statuses."""
        return str(self.cleaned_data["status"]) if self.is_valid() else ""

    def chosen_label(self) -> str:
        """The chosen status as people read it ("changes requested"); blank for all."""
        status = self.chosen()
        return str(self.labels[status]).lower() if status else ""

    def problem(self) -> str:
        """What is wrong with `?status=`, for the page (blank when nothing is)."""
        if self.is_valid():
            return ""
        raw = str(self.data.get("status", ""))[:40]
        return f'There is no status "{raw}": showing every status.'


def _page(
    request: HttpRequest,
    template: str,
    status_filter: StatusFilter,
    rows: QuerySet[Any],
    **more: Any,
) -> HttpResponse:
    page = Paginator(rows, PAGE_SIZE).get_page(request.GET.get("page"))
    context = {
        **more,
        "page": page,
        "status_filter": status_filter,
        "status": status_filter.chosen(),
        "status_label": status_filter.chosen_label(),
        "filter_problem": status_filter.problem(),
    }
    return render(request, template, context)


@login_required
def request_list(request: HttpRequest) -> HttpResponse:
    """The requests the user may see (members: their projects'; reviewers and staff: all)."""
    status_filter = StatusFilter(request.GET, statuses=AllocationRequest.Status)
    rows = list_selectors.request_list(cast(User, request.user), status=status_filter.chosen())
    return _page(request, "allocations/request_list.html", status_filter, rows)


@login_required
def allocation_list(request: HttpRequest) -> HttpResponse:
    """The allocations the user may see (members: their projects'; reviewers and staff: all)."""
    status_filter = StatusFilter(
        request.GET, statuses=Allocation.Status, more=((list_selectors.NEAR_END, "Near their end"),)
    )
    rows = list_selectors.allocation_list(cast(User, request.user), status=status_filter.chosen())
    return _page(
        request,
        "allocations/allocation_list.html",
        status_filter,
        rows,
        near_end=list_selectors.NEAR_END,
        near_days=list_selectors.NEAR_DAYS,
        near_percent=list_selectors.NEAR_PERCENT,
    )
