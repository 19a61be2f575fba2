"""Notebook sessions: open one on an allocation (reserving gpus x hours on the ledger under its
row lock, exactly like a job launch), start it on the hub after the commit, stop it.

The hub calls happen in tasks (tasks.py) that call `notebook_spawn` / `notebook_hub_stop`
here: never inside a transaction. Following the hub, the time and idle limits and the charge
live in sync.py. Who may do what: members of the allocation's project open sessions on it;
the owner (or staff) stops one; everyone else gets 404 (launcher.selectors).
"""

from __future__ import annotations

import datetime as dt
import logging
from decimal import Decimal, InvalidOperation
from typing import Any

from django.conf import settings
from django.contrib.contenttypes.models import ContentType
from django.db import transaction
from django.utils import timezone

from allocations.models import Allocation, Event
from allocations.selectors import allocation_ledger, is_member, visible_allocation_rows
from allocations.services import ledger_jobs_change, ledger_reserve
from allocations.transitions import record_event
from core.errors import Forbidden, Invalid
from core.figures import hours_text
from core.tasks import enqueue

from ..backends.contract import BackendError, Capability
from ..backends.registry import backend_for
from ..estimates import notebook_slots_refusal
from ..idempotency import Idempotency
from ..idempotency import record as idempotency_record
from ..models import IdempotencyKey
from ..selectors import NotVisible
from ..services.errors import LaunchConflict
from .hubapi import HubClient, HubError, HubStarting
from .ledger import reserved_cost
from .models import NotebookSession
from .selectors import may_stop, session_for
from .states import session_move

log = logging.getLogger(__name__)
S = NotebookSession.State
SPAWN_TASK, STOP_TASK = "notebooks.spawn", "notebooks.stop"
WAITING_FOR_HUB = "Waiting for the notebook hub to start."


class NotebookConflict(LaunchConflict):
    """The allocation cannot take this session now (HTTP 409, with the numbers)."""


def hub_client() -> HubClient:
    """The portal's client of the hub (settings.JUPYTERHUB_URL, JUPYTERHUB_API_TOKEN)."""
    return HubClient(settings.JUPYTERHUB_URL, settings.JUPYTERHUB_API_TOKEN)


def session_url(username: str, server_name: str) -> str:
    """Where the owner opens the session: the hub's proxy path of the named server."""
    return hub_client().server_url(username, server_name)


def max_gpus(allocation: Allocation) -> int:
    """The most GPUs one session may ask for: one node of the allocation's node type (else the
    facility's largest)."""
    if allocation.node_type is not None:
        return int(allocation.node_type.accelerators_per_node)
    return max((nt.accelerators_per_node for nt in allocation.facility.node_types.all()), default=0)


def notebook_refusal(allocation: Allocation) -> str:
    """Why no notebook can be opened on this allocation now ("" when one can)."""
    backend = backend_for(allocation.facility)
    if Capability.NOTEBOOK not in backend.capabilities:
        return (
            f"{allocation.facility.name} cannot run notebook sessions from the portal (its "
            "backend has no notebook spawner, or it is not connected)."
        )
    refused = backend.notebook_refusal(facility=allocation.facility)
    if refused:
        return refused
    if allocation.status != Allocation.Status.ACTIVE:
        return (
            f"The allocation is {allocation.get_status_display().lower()}; notebooks run "
            "only on an active allocation."
        )
    return ""


def notebook_check(*, allocation: Allocation, gpus: Any, hours: Any) -> tuple[int, Decimal]:
    """The validated (gpus, hours) of a session on this allocation, or Invalid (400) with a
    message per field: gpus a whole number within one node (0 only where it has no GPUs),
    hours > 0, at most settings.NOTEBOOK_MAX_HOURS, to 0.01 h."""
    errors: dict[str, list[str]] = {}
    top, unit = max_gpus(allocation), allocation.facility.unit
    try:
        n = int(gpus)
        if isinstance(gpus, bool) or n != gpus and str(n) != str(gpus).strip():
            raise ValueError
    except (TypeError, ValueError):
        errors["gpus"], n = [f"Give a whole number of {unit.many}."], 0
    else:
        low = 1 if top > 0 else 0
        if not low <= n <= top:
            errors["gpus"] = [f"Ask for {low} to {top} {unit.many} (one node of this allocation)."]
    limit = Decimal(str(settings.NOTEBOOK_MAX_HOURS))
    try:
        h = Decimal(str(hours).strip())
        if not h.is_finite():
            raise InvalidOperation
    except (InvalidOperation, ValueError):
        errors["hours"], h = ["Give the hours as a number, e.g. 2 or 1.5."], Decimal(0)
    else:
        if h <= 0 or h > limit:
            errors["hours"] = [f"Ask for more than 0 and at most {limit.normalize():f} hours."]
        elif h != h.quantize(Decimal("0.01")):
            errors["hours"] = ["Give the hours to at most two decimal places."]
    if errors:
        raise Invalid(errors)
    return n, h


def _allocation_for(actor: Any, allocation_id: Any) -> Allocation:
    try:
        pk = int(allocation_id)
    except (TypeError, ValueError):
        raise Invalid("Choose one of your allocations.", field="allocation") from None
    allocation = visible_allocation_rows(actor).filter(pk=pk).first()
    if allocation is None:
        raise NotVisible("Not found.")
    if not is_member(actor, allocation.project_id):
        raise Forbidden("Only members of the project can open notebooks on its allocations.")
    return allocation


def notebook_start(
    *, actor: Any, allocation_id: Any, gpus: Any, hours: Any, idempotency: Idempotency | None = None
) -> NotebookSession:
    """Open a notebook session for `actor` on the allocation: checks who (a member of its
    project; NotVisible 404 for others' allocations, Forbidden 403 for reviewers and staff who
    are not members), what (NotebookConflict 409: not active, no notebook spawner, gpus x
    hours does not fit what is left, with the shortfall, or, where the backend knows its slots,
    too few are free now) and how much (Invalid 400 per field).
    Reserves gpus x hours under the allocation's row lock and, after the commit, starts the
    server on the hub (task notebooks.spawn). With `idempotency`, the key is recorded with the
    session in its transaction (launcher/idempotency.py)."""
    allocation = _allocation_for(actor, allocation_id)
    refusal = notebook_refusal(allocation)
    if refusal:
        raise NotebookConflict(refusal, status=allocation.status)
    n, h = notebook_check(allocation=allocation, gpus=gpus, hours=hours)
    return _session_create(
        actor=actor, allocation=allocation, gpus=n, hours=h, idempotency=idempotency
    )


@transaction.atomic
def _session_create(
    *,
    actor: Any,
    allocation: Allocation,
    gpus: int,
    hours: Decimal,
    idempotency: Idempotency | None,
) -> NotebookSession:
    locked = (
        Allocation.objects.select_for_update(of=("self",))
        .select_related("facility")
        .get(pk=allocation.pk)
    )
    refusal = notebook_refusal(locked)
    if refusal:
        raise NotebookConflict(refusal, status=locked.status)
    seconds = NotebookSession.reservation_for(gpus=gpus, hours=hours)
    cost = reserved_cost(seconds, locked.facility.gpu_hour_rate)
    unit = locked.facility.unit  # GPUs, or CPUs where it has no GPUs
    ledger = allocation_ledger(locked.pk)
    need = Decimal(seconds) / 3600
    if need > ledger.gpu_hours_remaining:
        short = need - ledger.gpu_hours_remaining
        raise NotebookConflict(
            f"This notebook reserves {hours_text(need)} {unit.hours} ({gpus} {unit.of(gpus)} x "
            f"{hours_text(hours)} h) but only {hours_text(ledger.gpu_hours_remaining)} are left "
            f"on the allocation ({hours_text(ledger.gpu_hours_reserved)} reserved by unfinished "
            f"work): {hours_text(short)} {unit.hours} short. Ask for fewer {unit.many} or hours.",
            reserve_gpu_hours=need,
            remaining_gpu_hours=ledger.gpu_hours_remaining,
            reserved_gpu_hours=ledger.gpu_hours_reserved,
            shortfall_gpu_hours=short,
        )
    left = ledger.budget_remaining
    if left is not None and cost > left:
        raise NotebookConflict(
            f"This notebook reserves {cost} of the budget but only {left} is left "
            f"({ledger.cost_reserved} reserved by unfinished work): {cost - left} short.",
            reserve_cost=cost,
            remaining_budget=left,
            reserved_cost=ledger.cost_reserved,
            shortfall_cost=cost - left,
        )
    # Last, as it is the one refusal that passes by itself: a session that does not fit the
    # allocation is told so first. A notebook cannot wait for a slot as a job does.
    busy = notebook_slots_refusal(locked.facility, gpus)
    if busy:
        raise NotebookConflict(busy, status=locked.status)
    session = NotebookSession.objects.create(
        allocation=locked,
        user=actor,
        gpus=gpus,
        hours=hours,
        state=S.STARTING,
        reason="waiting for the notebook hub",
        reserved_gpu_seconds=seconds,
        reserved_cost=cost,
    )
    idempotency_record(idempotency, kind=IdempotencyKey.Kind.NOTEBOOK, object_id=session.pk)
    session.server_name = f"nb-{session.pk}"
    session.url = session_url(actor.get_username(), session.server_name)
    NotebookSession.objects.filter(pk=session.pk).update(
        server_name=session.server_name, url=session.url
    )
    ledger_reserve(allocation_id=locked.pk, session_ids=[session.pk])
    record_event(
        session,
        actor=actor,
        from_state="",
        to_state=session.state,
        comment=f"Opened: {unit.count(gpus)} for {hours_text(hours)} h, reserving "
        f"{hours_text(need)} {unit.hours}.",
    )
    enqueue(SPAWN_TASK, session.pk)
    return session


def notebook_fail(*, session: NotebookSession, reason: str, actor: Any = None) -> bool:
    """Mark a session failed with the reason, releasing its reservation (nothing charged).
    False when it had already moved on (charged, or failed)."""
    with ledger_jobs_change(allocation_ids=[session.allocation_id], session_ids=[session.pk]):
        fresh = NotebookSession.objects.select_for_update().get(pk=session.pk)
        if fresh.state == S.FAILED or fresh.charged_at is not None:
            return False
        session_move(
            fresh,
            to=S.FAILED,
            actor=actor,
            comment=reason,
            reason=reason[:300],
            stopped_at=fresh.stopped_at or timezone.now(),
        )
    session.state, session.reason = S.FAILED, reason[:300]
    return True


def user_options(
    session: NotebookSession, backend_name: str, options: dict[str, Any]
) -> dict[str, Any]:
    """The server's user_options (NOTEBOOKS.md): the session's facts, the backend's folders and
    datasets at the top level, and everything the backend returned as `backend_options`."""
    return {
        "session": session.pk,
        "backend": backend_name,
        "gpus": session.gpus,
        "hours": float(session.hours),
        "workdir": options.get("workdir", ""),
        "datasets": options.get("datasets", {}),
        "run_dir": options.get("run_dir", ""),
        "backend_options": options,
    }


def _hub_wait_over(session: NotebookSession) -> bool:
    """Whether this session has waited long enough for a hub still starting: the first time it
    finds the hub so, its history says it waits (and its reason); it waits on until
    `NOTEBOOK_HUB_START_WAIT_SECONDS` after that (90 s: `make run` starts the hub beside the
    portal, and a notebook opened in its first seconds must not fail for good)."""
    kind = ContentType.objects.get_for_model(NotebookSession)
    first = (
        Event.objects.filter(content_type=kind, object_id=session.pk, comment=WAITING_FOR_HUB)
        .order_by("created_at")
        .values_list("created_at", flat=True)
        .first()
    )
    if first is None:
        record_event(
            session, actor=None, from_state=S.STARTING, to_state=S.STARTING, comment=WAITING_FOR_HUB
        )
        NotebookSession.objects.filter(pk=session.pk, state=S.STARTING).update(
            reason="waiting for the notebook hub to start"
        )
        return False
    return timezone.now() - first >= dt.timedelta(seconds=hub_start_wait_seconds())


def hub_start_wait_seconds() -> int:
    return int(settings.NOTEBOOK_HUB_START_WAIT_SECONDS)


def notebook_spawn(*, session_id: int, last_try: bool = False) -> str:
    """Start the session's server on the hub (the task notebooks.spawn; idempotent: the hub
    finds a server already started). A permanent refusal (or a transient one on the last
    try) fails the session with the reason; a transient one propagates for a retry. A hub
    still starting (`HubStarting`) propagates too, for a bounded time (`_hub_wait_over`), then
    fails the session saying the hub did not start."""
    session = NotebookSession.objects.select_related(
        "allocation__facility", "allocation__project", "user"
    ).get(pk=session_id)
    if session.state != S.STARTING:
        return session.state
    backend = backend_for(session.allocation.facility)
    try:
        options = backend.notebook_options(allocation=session.allocation, session=session)
        sent = user_options(session, backend.name, options)
        NotebookSession.objects.filter(pk=session.pk, state=S.STARTING).update(
            options=sent, workdir=sent["workdir"], run_dir=sent["run_dir"]
        )
        started = hub_client().start_server(session.user.get_username(), session.server_name, sent)
    except HubStarting as error:
        if not _hub_wait_over(session) and not last_try:
            raise
        notebook_fail(
            session=session,
            reason=f"could not start: the notebook hub did not start within "
            f"{hub_start_wait_seconds()} s ({error.message}). Ask the portal's operators to "
            "check that it runs, then open the notebook again.",
        )
        return S.FAILED
    except BackendError as error:
        if not error.permanent and not last_try:
            raise
        notebook_fail(session=session, reason=f"could not start: {error.message}")
        return S.FAILED
    NotebookSession.objects.filter(pk=session.pk).update(
        spawned_at=timezone.now(), reason="" if started.ready else "the hub is starting it"
    )
    if started.ready:
        notebook_mark_running(session_id=session.pk)
    return S.RUNNING if started.ready else S.STARTING


def notebook_mark_running(*, session_id: int, started_at: Any = None) -> bool:
    """starting -> running (the hub says the server is ready). False if it already moved."""
    with transaction.atomic():
        session = NotebookSession.objects.select_for_update().get(pk=session_id)
        if session.state != S.STARTING:
            return False
        session_move(
            session,
            to=S.RUNNING,
            comment="JupyterLab is ready.",
            reason="",
            started_at=started_at or timezone.now(),
        )
    return True


def notebook_stop(*, actor: Any, session_id: Any) -> NotebookSession:
    """Stop a session (its owner, or staff). NotVisible (404) for those who may not see it,
    Forbidden (403) for other members, InvalidTransition (409) once it has stopped or failed.
    A session already stopping is returned as it is. The hub stops it after the commit."""
    session = session_for(actor, session_id)
    if not may_stop(actor, session):
        raise Forbidden("Only the person who opened this notebook (or staff) can stop it.")
    if session.state == S.STOPPING:
        return session
    who = "its owner" if session.user_id == actor.pk else f"{actor.get_username()} (staff)"
    return notebook_system_stop(session=session, reason=f"stopped by {who}", actor=actor)


@transaction.atomic
def notebook_system_stop(
    *, session: NotebookSession, reason: str, actor: Any = None
) -> NotebookSession:
    """Move a live session to stopping with the reason and stop its server after the commit
    (task notebooks.stop). InvalidTransition (409) from a final state."""
    session_move(
        session, to=S.STOPPING, actor=actor, comment=reason.capitalize() + ".", reason=reason[:300]
    )
    enqueue(STOP_TASK, session.pk)
    return session


def notebook_hub_stop(*, session_id: int) -> str:
    """Stop the session's server on the hub (the task notebooks.stop; idempotent). When the
    hub says it has stopped, the session is settled at once (sync.notebook_settle)."""
    session = NotebookSession.objects.select_related("user").get(pk=session_id)
    if session.state != S.STOPPING:
        return session.state
    try:
        stopped = hub_client().stop_server(session.user.get_username(), session.server_name)
    except HubError as error:
        if not error.permanent:
            raise
        log.warning("notebook %s: the hub refused the stop (%s)", session.pk, error)
        stopped = False
    return "stopped" if stopped else "stopping"
