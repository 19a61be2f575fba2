"""The allocation request workflow: one function per move of the state machine.

Each move is compare-and-swap with an audit event; notifications and provisioning run after
commit, never inside the transaction.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from core.errors import Forbidden
from core.tasks import enqueue
from core.versions import projects_bump

from ..models import Allocation, AllocationRequest, NodeType, Project
from ..notifications import notify_after_commit
from ..policy import RequestDraft, request_errors, trial_limit_reason
from ..roles import is_reviewer
from ..selectors import belongs_to, can_manage_project, membership
from ..states import REQUEST_MOVES
from ..transitions import InvalidTransition, record_event, transition
from .allocations import PROVISION_TASK, allocation_close, allocation_top_up
from .errors import PolicyError

if TYPE_CHECKING:
    from django.contrib.auth.models import User as AuthUser

    from ..roles import User

Status = AllocationRequest.Status
EDITABLE_FIELDS = (
    "facility",
    "node_type",
    "kind",
    "purpose",
    "extends",
    "cpu_hours",
    "gpu_hours",
    "cloud_budget",
    "start_date",
    "end_date",
    "data_sensitivity",
    "justification",
)


def _check_policy(req: AllocationRequest) -> None:
    errors = request_errors(RequestDraft.from_request(req), exclude_request_id=req.pk)
    if errors:
        raise PolicyError(errors)


def _check_requester(req: AllocationRequest, by: User) -> None:
    if req.requested_by_id == by.pk or can_manage_project(by, req.project):
        return
    raise Forbidden("Only the requester or the project's PI or managers can do that.")


@transaction.atomic
def request_create(
    *, by: AuthUser, project: Project, submit: bool = False, **fields: Any
) -> AllocationRequest:
    """Create a draft request (and submit it at once if `submit`). Members of the project only.

    Nothing is saved if any field or policy rule fails: PolicyError carries per-field messages.
    """
    if membership(by, project) is None:
        raise PolicyError("You are not a member of this project.", field="project")
    unknown = set(fields) - set(EDITABLE_FIELDS)
    if unknown:
        raise TypeError(f"Unknown request fields: {sorted(unknown)}")
    # Serialise creation per project so two concurrent trials cannot both pass the one-open-trial
    # rule.
    Project.objects.select_for_update().filter(pk=project.pk).first()
    req = AllocationRequest(project=project, requested_by=by, **fields)
    if req.node_type_id is None and req.facility_id is not None:
        # A facility with one node type needs no choice: naming it lets every launch on the
        # allocation be predicted (launcher/estimates.py).
        only = list(NodeType.objects.filter(facility_id=req.facility_id)[:2])
        req.node_type = only[0] if len(only) == 1 else None
    if req.purpose == AllocationRequest.Purpose.CLOSURE and not can_manage_project(by, project):
        raise Forbidden("Only the project's PI or a manager can ask to close an allocation early.")
    _check_policy(req)
    req.save()
    record_event(req, actor=by, from_state="", to_state=Status.DRAFT)
    if submit:
        # The draft was checked and saved a moment ago, in this transaction, under the project's
        # lock: submitted as it is, without locking and reading it again (fewer statements
        # while SQLite holds its one write lock).
        _submit(req, by=by)
    return req


@transaction.atomic
def request_update(*, request: AllocationRequest, by: User, **fields: Any) -> AllocationRequest:
    """Edit a request while it is a draft or has changes requested (else 409)."""
    _check_requester(request, by)
    locked = AllocationRequest.objects.select_for_update().get(pk=request.pk)
    if locked.status not in AllocationRequest.EDITABLE:
        raise InvalidTransition(locked, locked.status, "edited")
    for key, value in fields.items():
        if key not in EDITABLE_FIELDS:
            raise TypeError(f"Unknown request field: {key}")
        setattr(locked, key, value)
    _check_policy(locked)
    locked.save()
    projects_bump([locked.project_id])  # an edit records no event: the pages' cache (versions.py)
    return locked


@transaction.atomic
def request_submit(*, request: AllocationRequest, by: User) -> AllocationRequest:
    """Send the request to reviewers. A trial within policy on a facility that auto-approves
    trials is approved at once by the system (audited with no actor)."""
    _check_requester(request, by)
    Project.objects.select_for_update().filter(pk=request.project_id).first()
    request.refresh_from_db()
    if Status.SUBMITTED not in REQUEST_MOVES.get(request.status, ()):
        raise InvalidTransition(request, request.status, Status.SUBMITTED)
    _check_policy(request)
    return _submit(request, by=by)


def _submit(request: AllocationRequest, *, by: User) -> AllocationRequest:
    """The move itself, for a draft checked against the policy under its project's lock."""
    event = transition(
        request, to=Status.SUBMITTED, table=REQUEST_MOVES, actor=by, submitted_at=timezone.now()
    )
    notify_after_commit("request_submitted", event.pk)
    if request.kind == AllocationRequest.Kind.TRIAL and request.facility.trial_auto_approve:
        # Serialise per person (requester and PI), so two projects' trials submitted at once
        # cannot both pass the per-person limits.
        people = sorted({request.requested_by_id, request.project.pi_id})
        list(get_user_model().objects.select_for_update().filter(pk__in=people).order_by("pk"))
        reason = trial_limit_reason(request)
        if reason:
            record_event(
                request,
                actor=None,
                from_state=Status.SUBMITTED,
                to_state="held_for_review",
                comment=f"Not approved automatically: {reason}. A reviewer decides.",
            )
        else:
            _approve(
                request,
                by=None,
                gpu_hours=request.gpu_hours,
                comment="Trial within policy: approved automatically.",
            )
    return request


@transaction.atomic
def request_withdraw(
    *, request: AllocationRequest, by: User, comment: str = ""
) -> AllocationRequest:
    """The requester (or a PI/manager) takes back a request that is not yet decided."""
    _check_requester(request, by)
    transition(request, to=Status.WITHDRAWN, table=REQUEST_MOVES, actor=by, comment=comment)
    return request


def review_refusal(req: AllocationRequest, by: User) -> str:
    """Why `by` may not decide (approve, reject, request changes) on `req`, or "" if they may.
    A reviewer never decides a request they filed or one of a project they belong to (as PI,
    manager or member): a conflict of interest, superusers included."""
    if not is_reviewer(by):
        return "Only reviewers can decide on requests."
    if req.requested_by_id == by.pk:
        return "You cannot review your own request."
    if belongs_to(by, req.project_id):
        return (
            f"You are a member of {req.project.code}: another reviewer must decide on its "
            "requests (conflict of interest)."
        )
    return ""


def _check_reviewer(req: AllocationRequest, by: User) -> None:
    refusal = review_refusal(req, by)
    if refusal:
        raise Forbidden(refusal)


def _require_comment(comment: str, what: str) -> str:
    comment = (comment or "").strip()
    if not comment:
        raise PolicyError(f"Tell the requester why you {what}.", field="comment")
    return comment


@transaction.atomic
def request_approve(
    *, request: AllocationRequest, by: User, gpu_hours: int | None = None, comment: str = ""
) -> Allocation:
    """Grant a submitted request, possibly with fewer GPU-hours, and start provisioning."""
    _check_reviewer(request, by)
    lowest = 0 if request.purpose in AllocationRequest.CHANGES else 1
    if gpu_hours is not None and not lowest <= gpu_hours <= request.gpu_hours:
        raise PolicyError(
            f"Grant between {lowest} and the {request.gpu_hours} GPU-hours requested.",
            field="gpu_hours",
        )
    return _approve(
        request,
        by=by,
        gpu_hours=request.gpu_hours if gpu_hours is None else gpu_hours,
        comment=comment,
    )


def _approve(
    req: AllocationRequest, *, by: User | None, gpu_hours: int, comment: str
) -> Allocation:
    if gpu_hours < req.gpu_hours and not comment:
        comment = f"Granted {gpu_hours} of the {req.gpu_hours} GPU-hours requested."
    event = transition(
        req,
        to=Status.APPROVED,
        table=REQUEST_MOVES,
        actor=by,
        comment=comment,
        reviewed_by_id=getattr(by, "pk", None),
        reviewed_at=timezone.now(),
        decision_comment=comment,
        granted_gpu_hours=gpu_hours,
    )
    Purpose = AllocationRequest.Purpose
    extends = req.extends  # set for every top-up, extension and closure (the request's form)
    if req.purpose in (Purpose.TOP_UP, Purpose.EXTENSION, Purpose.CLOSURE) and extends is None:
        raise ValueError(f"request #{req.pk} ({req.purpose}) names no allocation")
    if extends is not None and req.purpose in (Purpose.TOP_UP, Purpose.EXTENSION):
        allocation = allocation_top_up(
            allocation=extends, gpu_hours=gpu_hours, by=by, end_date=req.end_date
        )
    elif extends is not None and req.purpose == Purpose.CLOSURE:
        allocation = allocation_close(
            allocation=extends, by=by, comment=f"Closed early on request #{req.pk}."
        )
    else:
        allocation = _grant(req, gpu_hours=gpu_hours, by=by)
    AllocationRequest.objects.filter(pk=req.pk).update(allocation=allocation)
    req.allocation = allocation
    notify_after_commit("request_decided", event.pk)
    return allocation


def _grant(req: AllocationRequest, *, gpu_hours: int, by: User | None) -> Allocation:
    end_date = req.end_date
    if req.kind == AllocationRequest.Kind.TRIAL:
        end_date = min(end_date, req.start_date + dt.timedelta(days=req.facility.trial_days))
    allocation = Allocation.objects.create(
        project=req.project,
        facility=req.facility,
        node_type=req.node_type,
        kind=req.kind,
        gpu_hours=Decimal(gpu_hours),
        cpu_hours=req.cpu_hours,
        budget=req.cloud_budget,
        start_date=req.start_date,
        end_date=end_date,
    )
    record_event(
        allocation,
        actor=by,
        from_state="",
        to_state=Allocation.Status.PROVISIONING,
        comment=f"Granted from request #{req.pk}.",
    )
    if req.purpose == AllocationRequest.Purpose.TRIAL_CONVERSION and req.extends:
        allocation_close(
            allocation=req.extends, by=by, comment=f"Converted to full allocation #{allocation.pk}."
        )
    enqueue(PROVISION_TASK, allocation.pk)
    return allocation


def _send_back(
    req: AllocationRequest, *, by: User, to: str, comment: str, why: str, notice: str
) -> AllocationRequest:
    """Reject or request changes: both need a comment, which the requester is sent."""
    _check_reviewer(req, by)
    comment = _require_comment(comment, why)
    event = transition(
        req,
        to=to,
        table=REQUEST_MOVES,
        actor=by,
        comment=comment,
        reviewed_by_id=by.pk,
        reviewed_at=timezone.now(),
        decision_comment=comment,
    )
    notify_after_commit(notice, event.pk)
    return req


@transaction.atomic
def request_reject(*, request: AllocationRequest, by: User, comment: str) -> AllocationRequest:
    """Refuse a submitted request; the requester is told why."""
    return _send_back(
        request,
        by=by,
        to=Status.REJECTED,
        comment=comment,
        why="reject it",
        notice="request_decided",
    )


@transaction.atomic
def request_request_changes(
    *, request: AllocationRequest, by: User, comment: str
) -> AllocationRequest:
    """Send a submitted request back to its requester to edit and resubmit."""
    return _send_back(
        request,
        by=by,
        to=Status.CHANGES_REQUESTED,
        comment=comment,
        why="need changes",
        notice="changes_requested",
    )
