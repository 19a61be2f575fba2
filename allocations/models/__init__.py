"""The allocations domain: catalogue, projects, requests, allocations, usage, audit events."""
from .allocation import Allocation
from .catalogue import Facility, NodeType, Sensitivity
from .event import Event
from .project import Project, ProjectMembership
from .request import AllocationRequest
from .usage import UsageRecord

__all__ = [
    "Allocation",
    "AllocationRequest",
    "Event",
    "Facility",
    "NodeType",
    "Project",
    "ProjectMembership",
    "Sensitivity",
    "UsageRecord",
]
