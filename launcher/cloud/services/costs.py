"""Money: estimates before launch (refused when over what is left) and charges as time accrues.

Charges are instance time x the catalogue price recorded on the node at launch, written as
`UsageRecord`s in chunks that never cross a clock hour, with external ids
`<instance-id>:<YYYYmmddTHHMM of the chunk start>`; a node's `charged_until` moves in the same
transaction, so re-running a charge (a retried task) never charges a minute twice.
"""

from __future__ import annotations

import datetime as dt
import math
from decimal import ROUND_HALF_UP, Decimal

from django.db import transaction
from django.db.models import F, Q, Sum

from allocations.models import Allocation, UsageRecord
from allocations.services import usage_check_thresholds, usage_record_many
from launcher.models import Job
from launcher.services.errors import LaunchConflict, LaunchRefused

from .. import clock
from ..models import CloudTask, Cluster, Node
from ..selectors import price_for, remaining

SOURCE = "cloud"  # UsageRecord.source of the cloud's charges (AwsBackend.usage_source)


class BudgetExceeded(LaunchConflict):
    """The launch would cost more than the allocation has left (HTTP 409, with the numbers)."""

    def __init__(self, message: str, *, estimate: Decimal, left: Decimal | None) -> None:
        super().__init__(message, estimate_cost=estimate, remaining_budget=left)
        self.estimate = estimate
        self.left = left


class PriceUnknown(LaunchRefused):
    """Neither the catalogue nor the facility knows this instance type's price (HTTP 400)."""


def estimate(
    *, allocation: Allocation, instance_type: str, gpus: int, hours: Decimal, market: str = "spot"
) -> dict[str, Decimal]:
    """Cost and GPU-hours of running one `instance_type` worker for `hours`."""
    price = price_for(facility=allocation.facility, instance_type=instance_type, market=market)
    if price is None:
        raise PriceUnknown(f"No catalogue price for {instance_type} ({market}).")
    return {
        "cost": (price * hours).quantize(Decimal("0.0001")),
        "gpu_hours": gpus * hours,
        "price_per_hour": price,
    }


def check_budget(
    *, allocation: Allocation, instance_type: str, gpus: int, hours: Decimal, market: str = "spot"
) -> Decimal:
    """Raise BudgetExceeded if the estimate exceeds what the ledger says is left of the budget
    (or, for a GPU-hour grant, of the GPU-hours), charges and reservations counted. Returns the
    estimated cost. For a cloud task launched on its own; a launcher job's money was checked by
    the ledger when it was launched (launcher/services/launch.py) and is reserved there."""
    est = estimate(
        allocation=allocation, instance_type=instance_type, gpus=gpus, hours=hours, market=market
    )
    left = remaining(allocation)
    if left["budget"] is not None and est["cost"] > left["budget"]:
        raise BudgetExceeded(
            f"Estimated cost {est['cost']:.2f} exceeds the {max(left['budget'], 0):.2f} left "
            f"of the budget.",
            estimate=est["cost"],
            left=left["budget"],
        )
    if allocation.gpu_hours > 0 and est["gpu_hours"] > left["gpu_hours"]:
        raise BudgetExceeded(
            f"Estimated {est['gpu_hours']:.1f} GPU-hours exceed the "
            f"{max(left['gpu_hours'], 0):.1f} left.",
            estimate=est["cost"],
            left=left["budget"],
        )
    return est["cost"]


def _chunks(start: dt.datetime, end: dt.datetime) -> list[tuple[dt.datetime, dt.datetime]]:
    out = []
    while start < end:
        hour_end = start.replace(minute=0, second=0, microsecond=0) + dt.timedelta(hours=1)
        stop = min(end, hour_end)
        out.append((start, stop))
        start = stop
    return out


def node_charge(*, node_id: int, now: dt.datetime | None = None) -> int:
    """Charge the node's instance time since the last charge up to the last whole minute (up to
    its end once it has ended). Returns records written. Idempotent and safe to retry."""
    now = now or clock.now()
    with transaction.atomic():
        node = Node.objects.select_for_update().select_related("cluster").get(pk=node_id)
        if node.running_at is None or not node.instance_id or node.state == Node.State.STOPPED:
            return 0  # a stopped instance pays for its disk only, which is not in the catalogue
        start = node.charged_until or node.running_at
        end = node.ended_at or now.replace(second=0, microsecond=0)
        chunks = _chunks(start, end)
        if not chunks:
            return 0
        job_id = _job_of(node)
        rows = [_record(node, a, b, job_id=job_id) for a, b in chunks]
        usage_record_many(rows)
        if job_id is not None:
            _charge_job(job_id)
        Node.objects.filter(pk=node.pk).update(charged_until=end)
    return len(rows)


def _charge_job(job_id: int) -> None:
    """Keep the job's charged GPU-seconds (what its page, the allocation's jobs table and its
    timeline of use show) equal to the instance time charged to it so far, every node and hour
    of it. The records are the charge; this column is their total, as Slurm and local jobs get
    theirs from `usage_ingest_records` (one record each there, many here). The reservation does
    not move: it already counts the greater of the column and the records (`with_reservation`)."""
    total = UsageRecord.objects.filter(job_id=job_id).aggregate(total=Sum("gpu_seconds"))["total"]
    Job.objects.filter(pk=job_id).update(gpu_seconds=total or 0)


def _job_of(node: Node) -> int | None:
    """The launcher job a worker ran (its task's, or the interrupted task's it ran before a
    replacement took over), so the charge shrinks that job's reservation (launcher/selectors.py, `job_reservations`)
    instead of being counted beside it. (A head node of an older version ran no job.)"""
    if node.role != Node.Role.WORKER:
        return None
    return (
        CloudTask.objects.filter(Q(node=node) | Q(interruptions__node=node))
        .exclude(job_id=None)
        .values_list("job_id", flat=True)
        .first()
    )


def _whole_seconds(start: dt.datetime, end: dt.datetime) -> int:
    """Whole seconds between two instants counted on the clock's second marks, so the records of
    consecutive chunks add up to the node's whole running time: flooring each chunk's own length
    would lose up to a second per chunk (a 600 s run split at an hour mark charged as 599)."""
    return math.floor(end.timestamp()) - math.floor(start.timestamp())


def _record(
    node: Node, start: dt.datetime, end: dt.datetime, *, job_id: int | None = None
) -> UsageRecord:
    seconds = Decimal(str((end - start).total_seconds()))
    cost = (node.price_per_hour * seconds / 3600).quantize(Decimal("0.0001"), ROUND_HALF_UP)
    return UsageRecord(
        allocation_id=node.cluster.allocation_id,
        source=SOURCE,
        external_id=f"{node.instance_id}:{start:%Y%m%dT%H%M%S}",
        period_start=start,
        period_end=end,
        gpu_seconds=_whole_seconds(start, end) * node.gpus,
        cpu_seconds=0,
        cost=cost,
        job_id=job_id,
        detail={
            "instance_type": node.instance_type,
            "market": node.market,
            "role": node.role,
            "node": node.pk,
            "cluster": node.cluster_id,
            "price_per_hour": str(node.price_per_hour),
        },
    )


def cluster_charge(*, cluster: Cluster) -> bool:
    """Charge every node of the cluster, then check the allocation's thresholds. Returns True
    when the budget is spent (the caller stops the workers)."""
    owing = cluster.nodes.exclude(running_at=None).filter(
        Q(ended_at__isnull=True)
        | Q(charged_until__isnull=True)
        | Q(charged_until__lt=F("ended_at"))
    )
    for node_id in owing.values_list("pk", flat=True):
        node_charge(node_id=node_id)
    usage_check_thresholds(allocation_id=cluster.allocation_id)
    allocation = Allocation.objects.get(pk=cluster.allocation_id)
    spent = allocation.budget is not None and allocation.spend >= allocation.budget
    return spent or allocation.status != Allocation.Status.ACTIVE
