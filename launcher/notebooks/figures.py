"""A session's figures as the pages and the API show them (one definition for both)."""

from __future__ import annotations

import datetime as dt

from django.utils import timezone

from .models import NotebookSession


def idle_seconds(session: NotebookSession, now: dt.datetime | None = None) -> int | None:
    """Seconds since the hub last saw activity, while the session runs (else None)."""
    if session.state != NotebookSession.State.RUNNING:
        return None
    last = session.last_activity or session.started_at
    if last is None:
        return None
    return max(int(((now or timezone.now()) - last).total_seconds()), 0)


def gpu_seconds_so_far(session: NotebookSession, now: dt.datetime | None = None) -> int:
    """The charge once it is charged; while it runs, gpus x the seconds since it started (what
    it will be charged if it stopped now, by the hub's clock); else 0."""
    if session.charged_at is not None:
        return int(session.gpu_seconds)
    if (
        session.state in (NotebookSession.State.RUNNING, NotebookSession.State.STOPPING)
        and session.started_at
    ):
        span = ((now or timezone.now()) - session.started_at).total_seconds()
        return min(int(span) * session.gpus, int(session.reserved_gpu_seconds))
    return 0
