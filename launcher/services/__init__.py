"""Every write of the launcher goes through one of these functions (HackSoft style)."""

from ..states import job_move, job_move_if
from .accounting import usage_ingest, usage_ingest_all, usage_ingest_records
from .accounts import allocation_sync, project_sync_members
from .alerts import failing_jobs_digest_send
from .cancel import job_cancel, sweep_cancel
from .errors import LaunchConflict
from .launch import job_launch, sweep_launch
from .monitor import facilities_with_live_jobs, job_observe, job_record_files, jobs_poll
from .rerun import job_rerun
from .resume import job_resume
from .submission import job_submit, submissions_dispatch, submissions_due, sweep_submit
from .sweeps import sweep_advance, sweeps_to_advance

__all__ = [
    "LaunchConflict",
    "allocation_sync",
    "facilities_with_live_jobs",
    "failing_jobs_digest_send",
    "job_cancel",
    "job_launch",
    "job_move",
    "job_move_if",
    "job_observe",
    "job_record_files",
    "job_rerun",
    "job_resume",
    "job_submit",
    "jobs_poll",
    "project_sync_members",
    "submissions_dispatch",
    "submissions_due",
    "sweep_advance",
    "sweep_cancel",
    "sweep_launch",
    "sweep_submit",
    "sweeps_to_advance",
    "usage_ingest",
    "usage_ingest_all",
    "usage_ingest_records",
]
