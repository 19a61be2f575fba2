"""Every write of the cloud app goes through one of these functions."""

from .clusters import (
    ClusterProvisioned,
    cluster_prepare,
    cluster_record,
    cluster_wake,
    node_launch,
    nodes_terminate,
)
from .costs import BudgetExceeded, PriceUnknown, check_budget, cluster_charge, estimate, node_charge
from .prices import price_catalogue_load, price_catalogue_refresh_spot
from .reconcile import cloud_reconcile
from .sync import cluster_sync
from .tasks import cluster_stop_workers, task_launch, task_start

__all__ = [
    "BudgetExceeded",
    "ClusterProvisioned",
    "PriceUnknown",
    "check_budget",
    "cloud_reconcile",
    "cluster_charge",
    "cluster_prepare",
    "cluster_record",
    "cluster_stop_workers",
    "cluster_sync",
    "cluster_wake",
    "estimate",
    "node_charge",
    "node_launch",
    "nodes_terminate",
    "price_catalogue_load",
    "price_catalogue_refresh_spot",
    "task_launch",
    "task_start",
]
