"""Whether the task queue is being served, known without asking the broker.

A job is `queued` until a Celery worker runs its submission; with no worker running it stays
queued and, before this, nothing said why. The beat schedules `launcher.heartbeat` every
`PORTAL_WORKER_HEARTBEAT_SECONDS` (15 s; settings.CELERY_BEAT_SCHEDULE), and whichever worker
runs it writes the time into one database row (`WorkerHeartbeat`), as does a worker when it
starts. A worker is taken to be alive while that time is less than
`PORTAL_WORKER_STALE_SECONDS` old (90 s). The row is in the database, not the cache, because
`make run`'s cache is each process's own memory, and the worker and the web server are two
processes.

The job page and `jobs/{id}/` (`queue_notice`) say that the queue is not being served when a
job has been queued longer than `PORTAL_QUEUE_NOTICE_SECONDS` (60 s) and no worker is alive:
a read of one row by its unique name, only for such a job (and at most once per API list),
never a broker round-trip (`celery inspect ping` waits a second or more for replies)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from django.conf import settings
from django.utils import timezone

from .models import Job, WorkerHeartbeat

NAME = "worker"


def beat(*, at: dt.datetime | None = None) -> None:
    """Record that a worker is running now (or `at`)."""
    WorkerHeartbeat.objects.update_or_create(name=NAME, defaults={"seen_at": at or timezone.now()})


def last_beat() -> dt.datetime | None:
    """When a worker was last seen, or None if never."""
    return WorkerHeartbeat.objects.filter(name=NAME).values_list("seen_at", flat=True).first()


def worker_alive(
    *, now: dt.datetime | None = None, seen: dt.datetime | None = None, read: bool = True
) -> bool:
    """Whether a worker was seen in the last PORTAL_WORKER_STALE_SECONDS (`seen`, when the
    caller has read it already: `read=False`)."""
    if read:
        seen = last_beat()
    if seen is None:
        return False
    now = now or timezone.now()
    return (now - seen).total_seconds() <= settings.PORTAL_WORKER_STALE_SECONDS


def waits_for_a_worker(job: Job, *, now: dt.datetime | None = None) -> bool:
    """Whether the job has been queued long enough that a running worker would have taken it."""
    now = now or timezone.now()
    return (
        job.state == Job.State.QUEUED
        and job.created_at is not None
        and (now - job.created_at).total_seconds() > settings.PORTAL_QUEUE_NOTICE_SECONDS
    )


def queue_notice(
    job: Job, *, seen: Callable[[], dt.datetime | None] = last_beat, now: dt.datetime | None = None
) -> str | None:
    """What the job's page and the API say about the queue: a sentence when the job waits in a
    queue no worker serves, else None. `seen` reads the last heartbeat; it is called only for
    a job that has waited (an API list passes one that reads once per request)."""
    now = now or timezone.now()
    if not waits_for_a_worker(job, now=now):
        return None
    last = seen()
    if worker_alive(now=now, seen=last, read=False):
        return None
    since = (
        f"no background worker has run since {timezone.localtime(last):%Y-%m-%d %H:%M %Z}"
        if last is not None
        else "no background worker has run yet"
    )
    return (
        f"The task queue is not being served: {since}, so this job waits in the queue. "
        "It is submitted as soon as a worker runs again; nothing is lost or charged "
        'meanwhile (staff: see docs/operations.md, "The worker").'
    )
