"""Every write to the allocations domain goes through one of these functions."""

from ..ledger import ledger_charge, ledger_jobs_change, ledger_reserve
from ..reconcile import ledger_reconcile
from .allocations import (
    allocation_activate,
    allocation_await_staff,
    allocation_close,
    allocation_exhaust,
    allocation_expire,
    allocation_fail,
    allocation_reprovision,
    allocation_resume,
    allocation_staff_action,
    allocation_suspend,
)
from .datasets import dataset_create, dataset_delete, dataset_update
from .errors import PolicyError
from .preferences import preference_set
from .projects import (
    MembershipConflict,
    project_create,
    project_member_add,
    project_member_remove,
    project_member_role_change,
    project_members_sync_record,
    project_update,
    user_find,
)
from .requests import (
    request_approve,
    request_create,
    request_reject,
    request_request_changes,
    request_submit,
    request_update,
    request_withdraw,
)
from .usage import usage_check_all, usage_check_thresholds, usage_correct, usage_record_many

__all__ = [
    "PolicyError",
    "preference_set",
    "ledger_charge",
    "ledger_jobs_change",
    "ledger_reconcile",
    "ledger_reserve",
    "dataset_create",
    "dataset_delete",
    "dataset_update",
    "allocation_activate",
    "allocation_await_staff",
    "allocation_close",
    "allocation_exhaust",
    "allocation_expire",
    "allocation_staff_action",
    "allocation_fail",
    "allocation_reprovision",
    "allocation_resume",
    "allocation_suspend",
    "MembershipConflict",
    "project_create",
    "project_update",
    "project_member_add",
    "project_member_remove",
    "project_member_role_change",
    "project_members_sync_record",
    "user_find",
    "request_approve",
    "request_create",
    "request_reject",
    "request_request_changes",
    "request_submit",
    "request_update",
    "request_withdraw",
    "usage_check_all",
    "usage_check_thresholds",
    "usage_correct",
    "usage_record_many",
]
