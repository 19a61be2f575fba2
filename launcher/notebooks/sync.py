"""Following the hub (the beat task notebooks.sync): states, the hours and idle limits, the
allocation's state, and the charge from the backend's own record.

For each user with live sessions, one GET of the hub's view (no transaction open). Then per
session, short transactions:

- the hub's view moves it (pending spawn -> starting, ready -> running, pending stop ->
  stopping, gone -> stopped; gone before it was ever ready -> failed unless the backend
  recorded a run);
- a running session past its hours, idle past `Facility.notebook_idle_minutes` (the hub's
  `last_activity`), or on an allocation that may not run work (Allocation.BLOCKED) is stopped
  with the reason;
- a stopped session is charged once from `backend.notebook_usage(session=...)`: one
  UsageRecord (source local/slurm, external id `notebook/<id>/<backend's id>`, exactly the
  record's GPU-seconds) through the accounting service, in the step that releases its
  reservation; a stopped session with no record after settings.NOTEBOOK_RECORD_GRACE_SECONDS
  is failed with the reason (nothing charged, reservation released);
- a hub server `nb-<id>` whose session is over (a start that raced a stop) is stopped.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections import defaultdict
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from allocations.models import Allocation, UsageRecord
from allocations.services import ledger_jobs_change
from allocations.transitions import InvalidTransition

from ..backends.contract import BackendError, NotebookUsage
from ..backends.registry import backend_for, usage_source
from ..services.accounting import usage_ingest_records
from .hubapi import HubClient, HubError, ServerView
from .ledger import reserved_cost
from .models import NotebookSession
from .services import hub_client, notebook_fail, notebook_mark_running, notebook_system_stop
from .states import session_move

log = logging.getLogger(__name__)
S = NotebookSession.State


def _owing() -> Any:
    """Sessions the sync looks at: live ones, and stopped ones not charged yet."""
    return (
        NotebookSession.objects.filter(
            Q(state__in=NotebookSession.LIVE) | Q(state=S.STOPPED, charged_at__isnull=True)
        )
        .select_related("allocation__facility", "user")
        .order_by("pk")
    )


def notebook_sync_all() -> dict[str, int]:
    """One pass over every session owing something (the beat task). Returns counts of what
    happened, for the log and the tests."""
    counts: dict[str, int] = defaultdict(int)
    if not settings.JUPYTERHUB_API_TOKEN:
        return {}  # no hub configured here: nothing to follow
    by_user: dict[str, list[NotebookSession]] = defaultdict(list)
    for session in _owing():
        by_user[session.user.get_username()].append(session)
    hub = hub_client()
    for username, sessions in by_user.items():
        try:
            views = hub.servers(username) or {}
        except HubError as error:
            log.warning("notebooks of %s not synced (%s); next time", username, error)
            continue
        for session in sessions:
            counts[notebook_observe(session=session, view=views.get(session.server_name))] += 1
    reaped = notebook_reap(hub=hub)
    if reaped:
        counts["reaped"] = reaped
    return dict(counts)


def notebook_reap(*, hub: HubClient) -> int:
    """Stop the hub's `nb-<id>` servers whose session is over (stopped or failed) or unknown:
    a start that raced a stop, or a server started by hand. Returns the servers stopped."""
    try:
        active = hub.active_servers()
    except HubError as error:
        log.warning("the hub's servers not listed (%s); next time", error)
        return 0
    named = {
        (user, name): int(name[3:])
        for user, names in active.items()
        for name in names
        if name.startswith("nb-") and name[3:].isdigit()
    }
    live = set(
        NotebookSession.objects.filter(
            pk__in=set(named.values()), state__in=NotebookSession.LIVE
        ).values_list("pk", flat=True)
    )
    stopped = 0
    for (user, name), pk in named.items():
        if pk not in live:
            try:
                hub.stop_server(user, name, remove=True)
                stopped += 1
                log.warning("stopped the hub's server %s/%s: its session is over", user, name)
            except HubError as error:
                log.warning("could not stop %s/%s (%s); next time", user, name, error)
    return stopped


def _limit_reason(session: NotebookSession, view: ServerView, now: dt.datetime) -> str:
    allocation = session.allocation
    if allocation.status in Allocation.BLOCKED:
        return f"stopped: the allocation is {allocation.get_status_display().lower()}"
    started = session.started_at or view.started
    if started and now >= started + dt.timedelta(hours=float(session.hours)):
        return f"stopped at its limit of {session.hours.normalize():f} h"
    idle = allocation.facility.notebook_idle_minutes
    last = view.last_activity or started
    if last and now - last >= dt.timedelta(minutes=idle):
        return f"stopped: idle for {idle} minutes (the facility's idle limit)"
    return ""


def queue_reason(view: ServerView) -> str:
    """Why a starting session waits, as its scheduler says (the Slurm spawner keeps squeue's
    state and reason in its server state, under PortalSpawner's `child_state`), or ""."""
    child = (view.state or {}).get("child_state") or {}
    if child.get("job_state") == "PENDING" and child.get("reason"):
        return f"waiting in the Slurm queue: {child['reason']}"[:300]
    return ""


def notebook_observe(
    *, session: NotebookSession, view: ServerView | None, now: dt.datetime | None = None
) -> str:
    """Move one session by the hub's view of its server and enforce its limits; settle it
    once the server is gone. Returns what happened (a word, for counts)."""
    now = now or timezone.now()
    if view is not None and view.last_activity and view.last_activity != session.last_activity:
        NotebookSession.objects.filter(pk=session.pk).update(last_activity=view.last_activity)
        session.last_activity = view.last_activity
    if session.state == S.STOPPED:
        return notebook_charge(session=session, now=now)
    if view is None or view.phase == "stopped":
        if session.state == S.STARTING and session.spawned_at is None:
            if now - session.created_at > dt.timedelta(
                seconds=settings.NOTEBOOK_SPAWN_TIMEOUT_SECONDS
            ):
                notebook_fail(session=session, reason="the notebook hub never started it")
                return "failed"
            return "waiting"  # the spawn task has not reached the hub yet
        return notebook_settle(session=session, now=now)
    if view.phase == "starting" and session.state == S.STARTING:
        waiting = queue_reason(view)
        if waiting != session.reason:
            NotebookSession.objects.filter(pk=session.pk, state=S.STARTING).update(reason=waiting)
            session.reason = waiting
    if view.phase == "running" and session.state == S.STARTING:
        notebook_mark_running(session_id=session.pk, started_at=view.started)
        session.state, session.started_at = S.RUNNING, view.started or now
    if session.state == S.RUNNING:
        reason = _limit_reason(session, view, now)
        if reason:
            notebook_system_stop(session=session, reason=reason)
            return "stopping"
    return session.state


def notebook_settle(*, session: NotebookSession, now: dt.datetime | None = None) -> str:
    """The hub has no server for the session any more: it has stopped (a session that was
    never ready with no record of a run has failed). Then charge it if the record is there."""
    now = now or timezone.now()
    with transaction.atomic():
        fresh = NotebookSession.objects.select_for_update().get(pk=session.pk)
        if fresh.state in NotebookSession.LIVE:
            never_ready = fresh.started_at is None
            reason = (
                fresh.reason
                if fresh.state == S.STOPPING
                else (
                    "the server stopped before it was ready"
                    if never_ready
                    else "the server stopped"
                )
            )
            session_move(
                fresh,
                to=S.STOPPED,
                comment=reason.capitalize() + ".",
                reason=reason[:300],
                stopped_at=now,
            )
        session.state, session.reason, session.stopped_at = (
            fresh.state,
            fresh.reason,
            fresh.stopped_at,
        )
    return notebook_charge(session=session, now=now)


def _record(session: NotebookSession, usage: NotebookUsage, *, source: str) -> UsageRecord:
    """The charge of the session's run, under its backend's ledger `source`."""
    facility = session.allocation.facility
    ended = usage.ended or usage.started
    return UsageRecord(
        allocation_id=session.allocation_id,
        source=source,
        external_id=f"notebook/{session.pk}/{usage.external_id}",
        period_start=usage.started,
        period_end=ended,
        gpu_seconds=usage.gpu_seconds,
        cost=reserved_cost(usage.gpu_seconds, facility.gpu_hour_rate),
        detail={
            "notebook_id": session.pk,
            "wall_seconds": usage.wall_seconds,
            "gpus": session.gpus,
            "reason": usage.reason,
        },
    )


def notebook_charge(*, session: NotebookSession, now: dt.datetime | None = None) -> str:
    """Charge a stopped session once from its backend's record (read outside any
    transaction), releasing its reservation in the same step; fail it when no record came
    within the grace. Idempotent: a charged session is left alone."""
    now = now or timezone.now()
    if session.state != S.STOPPED or session.charged_at is not None:
        return session.state
    backend = backend_for(session.allocation.facility)
    try:
        usage = backend.notebook_usage(session=session)
    except BackendError as error:
        if not error.permanent:
            log.warning("notebook %s: record not read (%s); next time", session.pk, error)
            return "waiting"
        notebook_fail(session=session, reason=f"its run could not be read: {error.message}")
        return "failed"
    if usage is None and session.spawned_at is None:
        notebook_fail(
            session=session, reason="stopped before the hub started it: nothing was charged"
        )
        return "failed"
    if usage is None or usage.ended is None:
        stopped = session.stopped_at or now
        if now - stopped > dt.timedelta(seconds=settings.NOTEBOOK_RECORD_GRACE_SECONDS):
            what = "never started" if session.started_at is None else "left no record of its run"
            notebook_fail(session=session, reason=f"the server {what}: nothing was charged")
            return "failed"
        return "waiting"
    record = _record(session, usage, source=usage_source(backend))
    with ledger_jobs_change(allocation_ids=[session.allocation_id], session_ids=[session.pk]):
        charged = NotebookSession.objects.filter(
            pk=session.pk, state=S.STOPPED, charged_at__isnull=True
        ).update(
            charged_at=now,
            gpu_seconds=usage.gpu_seconds,
            wall_seconds=usage.wall_seconds,
            # One fact, one figure: the page's Started and Stopped become the record's, so
            # they differ by the wall time charged (the polls' sightings stay in the history).
            started_at=usage.started,
            stopped_at=usage.ended,
            external_id=usage.external_id[:120],
        )
        if charged:
            usage_ingest_records(allocation=session.allocation, records=[record])
    session.charged_at, session.gpu_seconds = now, usage.gpu_seconds
    return "charged" if charged else session.state


def notebook_stop_allocation(*, allocation_id: int) -> int:
    """Stop every live session of an allocation that may no longer run work (suspended,
    exhausted, expired, closed): the receiver of allocation_status_changed enqueues this.
    Returns the sessions moved to stopping (their servers are stopped by notebooks.stop)."""
    allocation = Allocation.objects.filter(pk=allocation_id).first()
    if allocation is None or allocation.status not in Allocation.BLOCKED:
        return 0
    reason = f"stopped: the allocation is {allocation.get_status_display().lower()}"
    moved = 0
    for session in NotebookSession.objects.filter(
        allocation_id=allocation_id, state__in=(S.STARTING, S.RUNNING)
    ):
        try:
            notebook_system_stop(session=session, reason=reason)
            moved += 1
        except InvalidTransition:  # moved by someone else meanwhile: nothing to do
            log.info("notebook %s moved meanwhile; not stopped here", session.pk)
    return moved
