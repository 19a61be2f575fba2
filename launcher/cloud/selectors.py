"""Reads for the cloud app, scoped to what a user may see (others' clusters are absent)."""

from __future__ import annotations

from decimal import Decimal
from typing import TypedDict

from django.db.models import Prefetch, QuerySet

from allocations.models import Allocation, Facility
from allocations.selectors import User, allocation_ledger, visible_allocations

from .models import CloudTask, Cluster, Interruption, Node, PriceCatalogueEntry

ACTIVE_TASK_STATES = (
    CloudTask.State.QUEUED,
    CloudTask.State.LAUNCHING,
    CloudTask.State.RUNNING,
    CloudTask.State.PREEMPTED,
)


def visible_clusters(user: User) -> QuerySet[Cluster]:
    """Clusters of allocations the user may see, with nodes and tasks prefetched (a bounded
    number of queries for any number of clusters)."""
    allocations = visible_allocations(user).values("pk")
    return (
        Cluster.objects.filter(allocation__in=allocations)
        .select_related("allocation__project", "facility")
        .prefetch_related(
            Prefetch("nodes", queryset=Node.objects.order_by("role", "id")),
            Prefetch("tasks", queryset=CloudTask.objects.order_by("-id")),
        )
        .order_by("-created_at", "-id")
    )


def cluster_interruptions(cluster: Cluster) -> QuerySet[Interruption]:
    return Interruption.objects.filter(node__cluster=cluster).select_related(
        "node", "task", "replacement"
    )


def price_for(*, facility: Facility, instance_type: str, market: str) -> Decimal | None:
    """The catalogue's hourly price for this type and market in the facility's region; the
    facility's own node-type price when the catalogue has none; None if nobody knows."""
    region = (facility.backend_settings or {}).get("region", "us-east-1")
    entry = PriceCatalogueEntry.objects.filter(
        region=region, instance_type=instance_type, market=market
    ).first()
    if entry is not None:
        return entry.price_per_hour
    node_type = facility.node_types.filter(instance_type=instance_type).first()
    if node_type is None:
        return None
    return node_type.price_spot if market == "spot" else node_type.price_on_demand


def gpus_for(*, facility: Facility, instance_type: str) -> int:
    node_type = facility.node_types.filter(instance_type=instance_type).first()
    if node_type is not None:
        return node_type.accelerators_per_node
    entry = PriceCatalogueEntry.objects.filter(instance_type=instance_type).first()
    return entry.gpus if entry else 0


class Remaining(TypedDict):
    budget: Decimal | None
    reserved: Decimal
    gpu_hours: Decimal
    spend: Decimal


def remaining(allocation: Allocation) -> Remaining:
    """What is left of the allocation, from its ledger (allocations/ledger.py: charges and the
    reservations of unfinished work, never below zero): money (None without a budget), the
    money reserved, GPU-hours, and what was spent."""
    ledger = allocation_ledger(allocation.pk)
    return {
        "budget": ledger.budget_remaining,
        "reserved": ledger.cost_reserved,
        "gpu_hours": ledger.gpu_hours_remaining,
        "spend": ledger.spend,
    }
