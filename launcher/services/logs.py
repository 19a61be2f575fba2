"""A running job's log, as the trainer writes it.

The monitor (monitor.py) stores each running job's log tail on every poll (10 s). Someone
reading the log (the job page, `GET jobs/{id}/log/`, `portal jobs logs --follow`) should not
wait for the next poll: `job_log_fresh` reads the tail through the backend's `fetch` (the same
read the poll makes: on the local backend the cell's log.txt, which the supervisor opens as the
portal and hands to the member's process as its stdout and stderr; on Slurm the job's output
file, read over SSH as the portal's login), at most once per `LOG_FRESH_SECONDS` a job whoever
asks, and stores it as the poll does. Nothing new is opened to the member's code.
"""

from __future__ import annotations

import logging

from django.core.cache import cache

from ..backends.contract import BackendError, Capability, Fetched
from ..backends.registry import backend_for
from ..models import Job
from .monitor import job_record_files

log = logging.getLogger(__name__)
# How stale a running job's stored log may be when someone reads it: one backend read a job per
# this many seconds, however many pages and clients follow it.
LOG_FRESH_SECONDS = 2


def job_log_fresh(*, job: Job) -> Job:
    """`job` with its log tail as the backend has it now, while it runs (read through the
    backend's `fetch`, throttled per job, stored like the monitor's read). A job that is not
    running, a backend without `fetch` or one that cannot be reached now: the stored tail, as
    it is. Never inside a transaction (the read may be a network call)."""
    if job.state != Job.State.RUNNING or not job.scheduler_id:
        return job
    facility = job.allocation.facility
    runner = backend_for(facility)
    if Capability.FETCH not in runner.capabilities:
        return job
    if not cache.add(f"launcher:job-log-read:{job.pk}", 1, timeout=LOG_FRESH_SECONDS):
        return job  # read a moment ago: the stored tail is that fresh
    try:
        fetched = runner.fetch(facility=facility, job=job)
    except BackendError as error:
        log.warning("reading the log of job %s failed (%s); the stored tail stands", job.pk, error)
        return job
    if fetched.log_tail is not None:
        job_record_files(job=job, fetched=Fetched(log_tail=fetched.log_tail))
    return job
