"""When a cloud job would start, for placement (the seam's `start_estimate`): an idle worker of
the allocation's cluster takes it at once; otherwise it waits for a new worker, for the time
the facility's recent workers took from being asked for to running (the median of the last
READY_SAMPLE, last READY_DAYS days) or, with none measured yet, DEFAULT_READY_SECONDS, said so.
Beside it, the recent spot interruption rate: the share of the facility's spot workers of the
last READY_DAYS days that the cloud took back. Reads only (the cloud's own rows)."""

from __future__ import annotations

import datetime as dt
import statistics

from django.db.models import QuerySet
from django.utils import timezone

from allocations.models import Allocation
from launcher.backends.contract import StartEstimate
from launcher.placement.words import duration_text

from .models import Interruption, Node, PriceCatalogueEntry

READY_SAMPLE = 20
READY_DAYS = 30
DEFAULT_READY_SECONDS = 180.0


def cloud_start_estimate(allocation: Allocation) -> StartEstimate:
    """The wait before a job on this allocation starts, and the spot interruption rate."""
    since = timezone.now() - dt.timedelta(days=READY_DAYS)
    workers = Node.objects.filter(
        cluster__facility_id=allocation.facility_id, role=Node.Role.WORKER, created_at__gte=since
    )
    rate, said = _interruptions(workers)
    idle = workers.filter(
        cluster__allocation_id=allocation.pk, state=Node.State.RUNNING, idle_since__isnull=False
    ).exists()
    if idle:
        return StartEstimate(0.0, f"an idle worker is up; {said}", interruption_rate=rate)
    ready = [
        (running - created).total_seconds()
        for created, running in workers.filter(running_at__isnull=False)
        .order_by("-created_at")
        .values_list("created_at", "running_at")[:READY_SAMPLE]
        if running is not None
    ]
    if not ready:
        return StartEstimate(
            DEFAULT_READY_SECONDS,
            f"no measurement yet: no worker has started here in the last {READY_DAYS} days, "
            f"so a new worker is taken to be ready in {duration_text(DEFAULT_READY_SECONDS)} "
            f"(stated); {said}",
            interruption_rate=rate,
        )
    median = statistics.median(ready)
    return StartEstimate(
        median,
        f"a new worker: the median time to a ready worker over the last {len(ready)} here, "
        f"{duration_text(median)}; {said}",
        interruption_rate=rate,
    )


def _interruptions(workers: QuerySet[Node]) -> tuple[float | None, str]:
    spot = workers.filter(market=PriceCatalogueEntry.Market.SPOT)
    total = spot.count()
    if not total:
        return None, "no spot worker here recently, so no interruption rate yet"
    taken = (
        Interruption.objects.filter(node__in=spot.values("pk")).values("node").distinct().count()
    )
    rate = taken / total
    return rate, (
        f"{taken} of the last {total} spot workers ({rate:.0%}) were interrupted in the last "
        f"{READY_DAYS} days"
    )
