"""The reconciler: the cloud holds nothing the database does not know, and the database holds
nothing the cloud lost."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import transaction

from allocations.models import Facility

from .. import clock
from ..client import aws_client_for_facility
from ..models import Node
from ..states import move


@dataclass
class ReconcileReport:
    orphans_terminated: list[str] = field(default_factory=list)
    nodes_lost: list[int] = field(default_factory=list)


def cloud_reconcile(*, facility: Facility) -> ReconcileReport:
    """Terminate every live instance tagged `portal:managed` that no node row names (a launch
    whose row was lost, a cluster deleted by hand), and mark nodes whose instances vanished
    (`lost`; the sync replaces a vanished worker's task). No cluster is failed for a lost node:
    clusters have workers only, and one worker's loss is that worker's task's business.
    Idempotent."""
    report = ReconcileReport()
    backend = aws_client_for_facility(facility)
    live = {i.instance_id: i for i in backend.find(managed="1")}
    known = set(
        Node.objects.filter(cluster__facility=facility, instance_id__in=live).values_list(
            "instance_id", flat=True
        )
    )
    # Rows still `requested` may be mid-launch: their instances carry the node tag; keep them.
    pending = {
        str(pk)
        for pk in Node.objects.filter(
            cluster__facility=facility, state=Node.State.REQUESTED
        ).values_list("pk", flat=True)
    }
    orphans = [
        iid
        for iid, inst in live.items()
        if iid not in known and inst.tags.get("portal:node") not in pending
    ]
    backend.terminate(orphans)
    report.orphans_terminated = orphans
    nodes = (
        Node.objects.filter(cluster__facility=facility)
        .exclude(state__in=(*Node.GONE, Node.State.REQUESTED))
        .exclude(instance_id="")
        .select_related("cluster")
    )
    missing = [n for n in nodes if n.instance_id not in live]
    still_there = backend.describe([n.instance_id for n in missing])  # stopped/terminated too
    for node in missing:
        if node.instance_id in still_there and still_there[node.instance_id].state != "terminated":
            continue
        _lose(node, report)
    return report


@transaction.atomic
def _lose(node: Node, report: ReconcileReport) -> None:
    node = Node.objects.select_for_update().select_related("cluster").get(pk=node.pk)
    if node.state in Node.GONE:
        return
    move(
        node,
        to=Node.State.LOST,
        ended_at=clock.now(),
        comment="The instance vanished from the cloud.",
        state_reason="vanished",
    )
    report.nodes_lost.append(node.pk)
