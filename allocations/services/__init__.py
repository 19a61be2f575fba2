"""Every write to the allocations domain goes through one of these functions."""
from .allocations import (
    allocation_activate, allocation_close, allocation_exhaust, allocation_expire, allocation_fail,
    allocation_reprovision, allocation_resume, allocation_suspend,
)
from .errors import PolicyError
from .projects import project_add_member, project_create
from .requests import (
    request_approve, request_create, request_reject, request_request_changes, request_submit,
    request_update, request_withdraw,
)
from .usage import usage_check_thresholds, usage_record_many

__all__ = [
    "PolicyError",
    "allocation_activate", "allocation_close", "allocation_exhaust", "allocation_expire",
    "allocation_fail", "allocation_reprovision", "allocation_resume", "allocation_suspend",
    "project_add_member", "project_create",
    "request_approve", "request_create", "request_reject", "request_request_changes",
    "request_submit", "request_update", "request_withdraw",
    "usage_check_thresholds", "usage_record_many",
]
