"""Reservations of notebook sessions, in SQL, for the allocation ledger (allocations/ledger.py).

A session reserves what it may use, `gpus x hours` (the backend stops it at `hours`), from its
start until its backend's record is charged; a failed session (nothing ran, or nothing was
recorded) reserves nothing:

    reserved(session) = reserved_gpu_seconds   while charged_at is null and state != failed

Money reserved is the same seconds at the facility's GPU-hour rate (`reserved_cost`, fixed at
the start to 4 places, as a job's `estimate_cost` is).
The charge itself is a UsageRecord (not attributed to a job), written in the same step that
sets `charged_at` (services.py), so the reservation is replaced by the charge at once.
Registered from NotebooksConfig.ready().
"""

from __future__ import annotations

from collections.abc import Collection
from decimal import Decimal

from django.db.models import QuerySet, Sum

from allocations.ledger import MONEY, SECONDS

from .models import NotebookSession


def holding(sessions: QuerySet[NotebookSession] | None = None) -> QuerySet[NotebookSession]:
    """The sessions that still hold a reservation."""
    rows = NotebookSession.objects.all() if sessions is None else sessions
    return rows.filter(charged_at__isnull=True).exclude(state=NotebookSession.State.FAILED)


def reserved_cost(seconds: int | Decimal, rate: Decimal) -> Decimal:
    """Money for `seconds` GPU-seconds at `rate` per GPU-hour (exact to 4 places)."""
    return (Decimal(seconds) / 3600 * rate).quantize(Decimal("0.0001"))


def session_reservations(
    *, allocation_ids: Collection[int] | None = None, session_ids: Collection[int] | None = None
) -> dict[int, tuple[Decimal, Decimal]]:
    """{allocation id: (GPU-seconds, money)} reserved by the selected sessions (one query)."""
    rows = holding().order_by()
    if allocation_ids is not None:
        rows = rows.filter(allocation_id__in=allocation_ids)
    if session_ids is not None:
        rows = rows.filter(pk__in=session_ids)
    out = (
        rows.values("allocation_id")
        .annotate(
            seconds=Sum("reserved_gpu_seconds", output_field=SECONDS),
            cost=Sum("reserved_cost", output_field=MONEY),
        )
        .values_list("allocation_id", "seconds", "cost")
    )
    return {pk: (Decimal(seconds or 0), Decimal(cost or 0)) for pk, seconds, cost in out}
