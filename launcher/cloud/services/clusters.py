"""Clusters and their nodes: provisioning an allocation, launching nodes with capacity fallback,
stopping workers. Network calls happen outside transactions; rows are written first, so a crash
between the two is repaired by re-running (the node's token finds the instance it started)."""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass

from django.db import transaction

from allocations.models import Allocation, Facility
from launcher.backends.contract import BackendError, Provisioned
from launcher.cloud.aws import CapacityError, Instance, LaunchRequest

from .. import clock
from ..client import (
    aws_client,
    aws_client_for_facility,
    facility_bucket,
    facility_image,
    facility_region,
    facility_zones,
    installation_id,
)
from ..models import Cluster, Node
from ..selectors import gpus_for, price_for
from ..states import NODE_MOVES, move

log = logging.getLogger(__name__)


def new_token(kind: str) -> str:
    return f"{kind}-{uuid.uuid4().hex}"


def profile_name(facility: Facility, account: str) -> str:
    """The IAM role and instance profile of one allocation's nodes (64 characters at most)."""
    return f"portal-{facility.slug}-{account}"[:64]


@dataclass(frozen=True)
class ClusterProvisioned(Provisioned):
    """What the `aws` entry's provision made in AWS: the account (the allocation's prefix), its
    nodes' IAM instance profile and the facility's security group. `record` stores the
    allocation's cluster row with them (launcher/provisioning.py calls it)."""

    instance_profile: str = ""
    security_group_id: str = ""

    def record(self, *, allocation: Allocation) -> None:
        cluster_record(
            allocation=allocation,
            account=self.account,
            instance_profile=self.instance_profile,
            security_group_id=self.security_group_id,
        )


def cluster_prepare(allocation: Allocation) -> ClusterProvisioned:
    """The `aws` registry entry's provision step, in AWS only: make the bucket and the
    allocation's prefix, the allocation's IAM role and instance profile (that prefix only) and
    the facility's security group (no inbound rule); returns them (the account is the
    prefix's name). Idempotent; BackendErrors propagate (launcher/provisioning.py decides, and
    records the cluster through `ClusterProvisioned.record`). Nodes start with the first task."""
    facility = allocation.facility
    account = allocation.default_account_name()
    settings_ = facility.backend_settings or {}
    tags = {
        "portal:managed": "1",
        "portal:facility": facility.slug,
        "portal:installation": installation_id(),
    }
    client = aws_client_for_facility(facility)  # network only: no row is written here
    client.ensure_prefix(name=account)
    client.tag_bucket(tags)
    profile = client.ensure_worker_profile(
        name=profile_name(facility, account),
        prefix=f"{account}/",
        tags={**tags, "portal:allocation": str(allocation.pk), "portal:account": account},
        boundary=settings_.get("iam_permissions_boundary", ""),
    )
    group = client.ensure_security_group(
        name=f"portal-workers-{facility.slug}", tags=tags, vpc_id=settings_.get("vpc_id")
    )
    return ClusterProvisioned(account=account, instance_profile=profile, security_group_id=group)


def cluster_record(
    *, allocation: Allocation, account: str, instance_profile: str, security_group_id: str
) -> Cluster:
    """Record the allocation's cluster (once; a later provision updates its profile and
    security group), with the facility's settings. Database only, no network."""
    facility = allocation.facility
    settings_ = facility.backend_settings or {}
    cluster, created = Cluster.objects.get_or_create(
        allocation=allocation,
        defaults=dict(
            facility=facility,
            region=facility_region(facility),
            bucket=facility_bucket(facility),
            prefix=f"{account}/",
            allow_on_demand=bool(settings_.get("allow_on_demand", False)),
            worker_idle_seconds=int(settings_.get("worker_idle_seconds", 300)),
            idle_seconds=cluster_idle_seconds(settings_),
            instance_profile=instance_profile,
            security_group_id=security_group_id,
        ),
    )
    if not created and (cluster.instance_profile, cluster.security_group_id) != (
        instance_profile,
        security_group_id,
    ):
        Cluster.objects.filter(pk=cluster.pk).update(
            instance_profile=instance_profile, security_group_id=security_group_id
        )
    return cluster


def cluster_idle_seconds(settings_: dict) -> int:
    """How long a cluster with no task and no worker stays `idle` before it is `stopped`:
    `idle_seconds`, or the `head_idle_seconds` of older settings (read, never required), 900.
    Stored in `Cluster.idle_seconds` (no head node is launched)."""
    return int(settings_.get("idle_seconds", settings_.get("head_idle_seconds", 900)))


@dataclass(frozen=True)
class Candidate:
    instance_type: str
    zone: str | None
    market: str


def launch_candidates(node: Node) -> list[Candidate]:
    """Where to try, in order: the requested type in each zone, then the facility's other
    types with at least as many GPUs (cheapest spot first), all spot; then the same on-demand
    if the cluster allows it."""
    cluster = node.cluster
    zones = facility_zones(cluster.facility)
    others = [
        nt.instance_type
        for nt in cluster.facility.node_types.all()
        if nt.instance_type
        and nt.instance_type != node.instance_type
        and nt.accelerators_per_node >= max(node.gpus, 1)
    ]
    others.sort(
        key=lambda t: price_for(facility=cluster.facility, instance_type=t, market="spot") or 10**9
    )
    types = [node.instance_type, *others]
    markets = ["spot", "on-demand"] if cluster.allow_on_demand else ["spot"]
    return [Candidate(t, z, m) for m in markets for t in types for z in zones]


def node_create(*, cluster: Cluster, instance_type: str, gpus: int) -> Node:
    """A worker row in `requested` (spot first); the caller enqueues its launch after commit.
    Clusters have workers only: nothing of the design needs a head node (data and checkpoints
    live in S3, the agent on each worker runs its tasks)."""
    return Node.objects.create(
        cluster=cluster,
        role=Node.Role.WORKER,
        token=new_token("w"),
        instance_type=instance_type,
        market="spot",
        gpus=gpus,
    )


def node_launch(*, node_id: int, user_data: str = "") -> Node:
    """Start the node's instance, trying the fallback candidates on capacity errors.

    Idempotent: a node no longer `requested` is returned as is, and an instance already tagged
    with this node (a launch whose answer was lost in a crash) is adopted, not duplicated."""
    node = Node.objects.select_related("cluster__facility", "cluster__allocation").get(pk=node_id)
    if node.state != Node.State.REQUESTED:
        return node
    cluster = node.cluster
    backend = aws_client(cluster)
    # This installation's instance of this node row: the installation is in every lookup, and
    # the launch token (random per node) must match too, so a restored database whose row ids
    # were reused never adopts an instance launched for another row.
    adopted = [
        i
        for i in backend.find(node=str(node.pk))
        if i.tags.get("portal:token", "").startswith(f"{node.token}-")
    ]
    if adopted:
        return _record_launch(node, adopted[0], refusals=[], image_source="adopted")
    kind, value = facility_image(cluster.facility)
    try:
        image = value if kind == "id" else backend.image_from_parameter(value)
    except BackendError as exc:
        if not exc.permanent:
            raise
        return _fail_node(node, [], reason=f"No image: {exc.message}")
    source = f"ssm:{value}" if kind == "ssm" else "facility image_id"
    refusals: list[dict] = []
    for i, cand in enumerate(launch_candidates(node)):
        request = LaunchRequest(
            token=f"{node.token}-{i}",
            instance_type=cand.instance_type,
            market=cand.market,
            zone=cand.zone,
            user_data=user_data,
            tags=_tags(node, cand),
            image_id=image,
            instance_profile=cluster.instance_profile,
            security_group_ids=(cluster.security_group_id,) if cluster.security_group_id else (),
        )
        try:
            instance = backend.launch(request)
        except CapacityError as exc:
            refusals.append(
                {
                    "type": cand.instance_type,
                    "zone": cand.zone,
                    "market": cand.market,
                    "code": exc.code,
                }
            )
            continue
        return _record_launch(node, instance, refusals=refusals, image_source=source)
    return _fail_node(node, refusals)


def _tags(node: Node, cand: Candidate) -> dict[str, str]:
    cluster = node.cluster
    return {
        "allocation": str(cluster.allocation_id),
        "cluster": str(cluster.pk),
        "node": str(node.pk),
        "role": node.role,
        "account": cluster.prefix.rstrip("/"),
        "gpus": str(gpus_for(facility=cluster.facility, instance_type=cand.instance_type)),
    }


@transaction.atomic
def _record_launch(
    node: Node, instance: Instance, *, refusals: list[dict], image_source: str = ""
) -> Node:
    facility = node.cluster.facility
    price = (
        price_for(facility=facility, instance_type=instance.instance_type, market=instance.market)
        or 0
    )
    move(
        node,
        to=Node.State.PENDING,
        comment="Instance started.",
        instance_id=instance.instance_id,
        instance_type=instance.instance_type,
        market=instance.market,
        zone=instance.zone,
        price_per_hour=price,
        gpus=gpus_for(facility=facility, instance_type=instance.instance_type),
        attempts=refusals,
        image_id=instance.image_id,
        image_source=image_source[:200],
    )
    return node


@transaction.atomic
def _fail_node(node: Node, refusals: list[dict], *, reason: str = "") -> Node:
    reason = reason or "No capacity: " + ", ".join(
        f"{r['type']}/{r['zone']}/{r['market']} {r['code']}" for r in refusals
    )
    move(
        node,
        to=Node.State.FAILED,
        comment=reason[:300],
        state_reason=reason[:300],
        attempts=refusals,
        ended_at=clock.now(),
    )
    return node


WAKES = (Cluster.State.REQUESTED, Cluster.State.IDLE, Cluster.State.STOPPED, Cluster.State.FAILED)


def cluster_wake(*, cluster_id: int) -> Cluster:
    """A task is about to start: a cluster that is `requested`, `idle` (no worker left),
    `stopped` or `failed` moves to `provisioning` (its worker is booting; the sync moves it to
    `ready` once a worker runs). Launches nothing itself: a cluster has no head node.
    Idempotent; a cluster already provisioning, ready or stopping is left as it is."""
    with transaction.atomic():
        cluster = Cluster.objects.select_for_update().get(pk=cluster_id)
        if cluster.state in WAKES:
            move(
                cluster,
                to=Cluster.State.PROVISIONING,
                comment="A task arrived: starting its worker.",
                idle_since=None,
            )
    return cluster


def nodes_terminate(
    *, cluster: Cluster, nodes: list[Node], reason: str, to: str = Node.State.TERMINATED
) -> int:
    """Terminate these nodes' instances, then mark them (network first: a crash leaves them
    live in the database, and the next sync terminates them again). Returns nodes ended."""
    ids = [n.instance_id for n in nodes if n.instance_id]
    aws_client(cluster).terminate(ids)
    ended = 0
    for node in nodes:
        with transaction.atomic():
            fresh = Node.objects.select_for_update().get(pk=node.pk)
            if fresh.state in Node.GONE or to not in NODE_MOVES.get(fresh.state, ()):
                continue
            move(fresh, to=to, comment=reason, state_reason=reason[:300], ended_at=clock.now())
            ended += 1
    return ended
