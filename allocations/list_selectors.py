"""The rows of the list pages /requests/ and /allocations/: what `visible_requests` and
`visible_allocation_rows` let the user see, newest first, with only the columns the pages
show (a page of rows is one query, whatever its length)."""

from __future__ import annotations

from django.db.models import QuerySet

from .models import Allocation, AllocationRequest
from .selectors import User, visible_allocation_rows, visible_requests

REQUEST_LIST_COLUMNS = (
    "kind",
    "purpose",
    "status",
    "gpu_hours",
    "granted_gpu_hours",
    "created_at",
    "updated_at",
    "project__code",
    "project__title",
    "facility__name",
)
ALLOCATION_LIST_COLUMNS = (
    "kind",
    "status",
    "gpu_hours",
    "gpu_seconds_used",
    "end_date",
    "created_at",
    "project__code",
    "project__title",
    "facility__name",
)


def request_list(user: User, *, status: str = "") -> QuerySet[AllocationRequest]:
    """The requests `user` may see (reviewers and staff: all), newest first; one status's
    when `status` is given."""
    rows = (
        visible_requests(user)
        .select_related(None)
        .select_related("project", "facility")
        .only(*REQUEST_LIST_COLUMNS)
        .order_by("-created_at", "-id")
    )
    return rows.filter(status=status) if status else rows


def allocation_list(user: User, *, status: str = "") -> QuerySet[Allocation]:
    """The allocations `user` may see (reviewers and staff: all), newest first; one status's
    when `status` is given."""
    rows = (
        visible_allocation_rows(user)
        .select_related(None)
        .select_related("project", "facility")
        .only(*ALLOCATION_LIST_COLUMNS)
        .order_by("-created_at", "-id")
    )
    return rows.filter(status=status) if status else rows
