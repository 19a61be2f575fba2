"""The allocations domain: catalogue, projects, requests, allocations, usage, audit events."""

from .alert import UsageAlert
from .allocation import Allocation
from .catalogue import Facility, NodeType, Sensitivity
from .dataset import Dataset
from .event import Event
from .preference import NotificationPreference
from .project import Project, ProjectMembership
from .request import AllocationRequest
from .usage import LedgerPass, UsageMonth, UsageRecord

__all__ = [
    "Allocation",
    "AllocationRequest",
    "Dataset",
    "Event",
    "Facility",
    "LedgerPass",
    "NotificationPreference",
    "NodeType",
    "Project",
    "ProjectMembership",
    "Sensitivity",
    "UsageAlert",
    "UsageMonth",
    "UsageRecord",
]
