"""The rows of the list pages /requests/ and /allocations/: what `visible_requests` and
`visible_allocation_rows` let the user see, newest first, with only the columns the pages
show (a page of rows is one query, whatever its length). Also the one rule of which
allocations are near their end (`near_their_end`), which the allocations list filters by and
the staff home lists."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from django.db.models import (
    BooleanField,
    Exists,
    ExpressionWrapper,
    F,
    OuterRef,
    Q,
    QuerySet,
    Value,
)
from django.utils import timezone

from .models import Allocation, AllocationRequest, NodeType
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


NEAR_PERCENT = Decimal("80")
NEAR_DAYS = 14
#: The allocations list's `?status=` for the allocations near their end (not a model status).
NEAR_END = "near-end"


def cpu_only(facility: str = "facility") -> ExpressionWrapper:
    """True where the row's `facility` has node types and every one is a CPU node type: its
    hours are CPU-hours (allocations/units.py, `unit_of`), read in the row's own query (two
    EXISTS on the node types' facility index), so a list of any length stays one query."""
    nodes = NodeType.objects.filter(facility=OuterRef(facility))
    return ExpressionWrapper(
        Q(Exists(nodes)) & ~Q(Exists(nodes.exclude(device="cpu"))), output_field=BooleanField()
    )


def near_their_end(rows: QuerySet[Allocation]) -> QuerySet[Allocation]:
    """Active allocations at >= NEAR_PERCENT of their GPU-hours or ending within NEAR_DAYS,
    the soonest end first (the partial index `allocation_active_end`)."""
    soon = timezone.localdate() + dt.timedelta(days=NEAR_DAYS)
    return rows.filter(
        Q(status=Allocation.Status.ACTIVE),
        Q(end_date__lte=soon)
        | Q(gpu_seconds_used__gte=F("gpu_hours") * Value(3600 * NEAR_PERCENT / 100)),
    ).order_by("end_date", "id")


def request_list(user: User, *, status: str = "") -> QuerySet[AllocationRequest]:
    """The requests `user` may see (reviewers and staff: all), newest first; one status's
    when `status` is given."""
    rows = (
        visible_requests(user)
        .select_related(None)
        .select_related("project", "facility")
        .only(*REQUEST_LIST_COLUMNS)
        .annotate(cpu_only=cpu_only())
        .order_by("-created_at", "-id")
    )
    return rows.filter(status=status) if status else rows


def allocation_list(user: User, *, status: str = "") -> QuerySet[Allocation]:
    """The allocations `user` may see (reviewers and staff: all), newest first; one status's
    when `status` is given, or (NEAR_END) those near their end, the soonest end first."""
    rows = (
        visible_allocation_rows(user)
        .select_related(None)
        .select_related("project", "facility")
        .only(*ALLOCATION_LIST_COLUMNS)
        .annotate(cpu_only=cpu_only())
        .order_by("-created_at", "-id")
    )
    if status == NEAR_END:
        return near_their_end(rows)
    return rows.filter(status=status) if status else rows
