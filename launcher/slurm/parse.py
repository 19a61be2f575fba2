"""Pure parsers for Slurm 22.05 command output (no I/O), kept apart so they can be benchmarked.

Why `--parsable2` rather than `--json`: in 22.05 `squeue --json` ignores `--jobs`/`--user` and
dumps every job in the cluster (~5 KB each), and `sacct --json` is ~20x larger and slower to
produce and parse than the `|`-separated form for the few fields we need. The variable-width
field (JobName) is always requested last and split off with `maxsplit`, so a `|` in a job name
cannot shift columns.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from launcher.slurm.records import JobState, JobStatus, UsageRow

SACCT_USAGE_FIELDS = (
    "JobID",
    "Account",
    "State",
    "ElapsedRaw",
    "AllocTRES",
    "Start",
    "End",
    "JobName",
)
SACCT_STATUS_FIELDS = ("JobID", "State", "ExitCode", "ElapsedRaw", "Reason", "JobName")
SACCT_NAMED_FIELDS = (
    "JobID",
    "State",
    "ElapsedRaw",
    "AllocTRES",
    "Start",
    "End",
    "Reason",
    "JobName",
)
SQUEUE_STATUS_FORMAT = "%i|%T|%r|%M|%j"  # id (12 or 12_3), state, reason, elapsed, name

_STATE_MAP = {
    "PENDING": JobState.PENDING,
    "REQUEUED": JobState.PENDING,
    "REQUEUE_HOLD": JobState.PENDING,
    "REQUEUE_FED": JobState.PENDING,
    "RESV_DEL_HOLD": JobState.PENDING,
    "CONFIGURING": JobState.RUNNING,
    "RUNNING": JobState.RUNNING,
    "COMPLETING": JobState.RUNNING,
    "SUSPENDED": JobState.RUNNING,
    "STOPPED": JobState.RUNNING,
    "SIGNALING": JobState.RUNNING,
    "STAGE_OUT": JobState.RUNNING,
    "RESIZING": JobState.RUNNING,
    "COMPLETED": JobState.SUCCEEDED,
    "CANCELLED": JobState.CANCELLED,
    "REVOKED": JobState.CANCELLED,
    "TIMEOUT": JobState.TIMEOUT,
    "DEADLINE": JobState.TIMEOUT,
    "PREEMPTED": JobState.PREEMPTED,
    "FAILED": JobState.FAILED,
    # The node went away under the job: not the job's fault, so it resumes from its checkpoint.
    "NODE_FAIL": JobState.PREEMPTED,
    "BOOT_FAIL": JobState.FAILED,
    "OUT_OF_MEMORY": JobState.FAILED,
    "SPECIAL_EXIT": JobState.FAILED,
}

# How an array's tasks sum up to one state: the first state present in this order wins.
_ARRAY_PRECEDENCE = (
    JobState.RUNNING,
    JobState.PENDING,
    JobState.PREEMPTED,
    JobState.UNKNOWN,
    JobState.FAILED,
    JobState.TIMEOUT,
    JobState.CANCELLED,
    JobState.SUCCEEDED,
)


def map_state(raw: str) -> JobState:
    """Slurm's state word ('CANCELLED by 1001', 'RUNNING') as a JobState."""
    word = raw.split(" ", 1)[0].rstrip("+")
    return _STATE_MAP.get(word, JobState.UNKNOWN)


def _gres_gpus(tres: str) -> int:
    """Allocated GPUs in an AllocTRES string ('cpu=1,gres/gpu=2,node=1' -> 2)."""
    start = tres.find("gres/gpu=")
    if start < 0:
        return 0
    start += 9
    end = tres.find(",", start)
    return int(tres[start:] if end < 0 else tres[start:end])


def _timestamp(value: str) -> dt.datetime | None:
    if not value or value[0] not in "0123456789":  # 'Unknown', 'None'
        return None
    return dt.datetime.fromisoformat(value)


def parse_sacct_usage(text: str) -> list[UsageRow]:
    """Rows of `sacct -n -P -o <SACCT_USAGE_FIELDS>`; allocation rows have step ''."""
    rows: list[UsageRow] = []
    append = rows.append
    last = len(SACCT_USAGE_FIELDS) - 1
    for line in text.splitlines():
        if not line:
            continue
        jobid, account, state, elapsed, tres, start, end, _name = line.split("|", last)
        job, _, step = jobid.partition(".")
        append(
            UsageRow(
                job_id=job,
                step=step,
                account=account,
                state=state.split(" ", 1)[0],
                elapsed_seconds=int(elapsed or 0),
                gpus=_gres_gpus(tres),
                start=_timestamp(start),
                end=_timestamp(end),
            )
        )
    return rows


@dataclass(frozen=True)
class NamedJob:
    """A job's allocation row with its name and Slurm's reason (a notebook session's job)."""

    job_id: str
    name: str
    state: str
    reason: str
    elapsed_seconds: int
    gpus: int
    start: dt.datetime | None
    end: dt.datetime | None

    @property
    def gpu_seconds(self) -> int:
        return self.elapsed_seconds * self.gpus


def parse_sacct_named(text: str) -> list[NamedJob]:
    """Rows of `sacct -n -P -X -o <SACCT_NAMED_FIELDS>`."""
    jobs = []
    last = len(SACCT_NAMED_FIELDS) - 1
    for line in text.splitlines():
        if not line:
            continue
        jobid, state, elapsed, tres, start, end, reason, name = line.split("|", last)
        jobs.append(
            NamedJob(
                job_id=jobid,
                name=name,
                state=state.split(" ", 1)[0],
                reason="" if reason == "None" else reason,
                elapsed_seconds=int(elapsed or 0),
                gpus=_gres_gpus(tres),
                start=_timestamp(start),
                end=_timestamp(end),
            )
        )
    return jobs


def without_jobs_named(text: str, prefix: str) -> str:
    """`sacct -P -o <SACCT_USAGE_FIELDS>` output less the jobs whose name (the last field)
    starts with `prefix`, and less their steps ('12.batch' goes with '12')."""
    lines = text.splitlines()
    skipped = {
        line.split("|", 1)[0]
        for line in lines
        if line.rsplit("|", 1)[-1].startswith(prefix) and "." not in line.split("|", 1)[0]
    }
    return "\n".join(
        line for line in lines if line.split("|", 1)[0].split(".", 1)[0] not in skipped
    )


def parse_sacct_status(text: str) -> dict[str, JobStatus]:
    """Job (and array task) statuses from `sacct -n -P -X -o <SACCT_STATUS_FIELDS>`."""
    result: dict[str, JobStatus] = {}
    last = len(SACCT_STATUS_FIELDS) - 1
    for line in text.splitlines():
        if not line:
            continue
        jobid, state, exit_code, elapsed, reason, _name = line.split("|", last)
        code = exit_code.split(":", 1)[0]
        result[jobid] = JobStatus(
            job_id=jobid,
            state=map_state(state),
            reason="" if reason == "None" else reason,
            exit_code=int(code) if code.isdigit() else None,
            elapsed_seconds=int(elapsed or 0),
        )
    return result


def _elapsed_seconds(value: str) -> int:
    """squeue's %M ('1-02:03:04', '2:03', '0:05') in seconds."""
    days, _, clock = value.rpartition("-")
    total = 0
    for part in clock.split(":"):
        total = total * 60 + int(part or 0)
    return total + int(days or 0) * 86400


def parse_squeue_status(text: str) -> dict[str, JobStatus]:
    """Job (and array task) statuses from `squeue -h --array -o <SQUEUE_STATUS_FORMAT>`."""
    result: dict[str, JobStatus] = {}
    for line in text.splitlines():
        if not line:
            continue
        jobid, state, reason, elapsed, _name = line.split("|", 4)
        result[jobid] = JobStatus(
            job_id=jobid,
            state=map_state(state),
            reason="" if reason == "None" else reason,
            elapsed_seconds=_elapsed_seconds(elapsed) if elapsed[:1].isdigit() else 0,
        )
    return result


def merge_status(
    live: dict[str, JobStatus], accounted: dict[str, JobStatus]
) -> dict[str, JobStatus]:
    """One view per job id: sacct's final record wins; otherwise squeue's (sacct lags squeue)."""
    merged = dict(live)
    for jobid, status in accounted.items():
        if status.state.final or jobid not in live:
            merged[jobid] = status
    return merged


def aggregate(job_id: str, records: dict[str, JobStatus]) -> JobStatus:
    """The status of `job_id`: the record itself, or its array tasks summed up."""
    if job_id in records and "_" in job_id:
        return records[job_id]
    prefix = f"{job_id}_"
    tasks = {k: v for k, v in records.items() if k.startswith(prefix) and "[" not in k}
    if not tasks:
        return records.get(job_id, JobStatus(job_id=job_id, state=JobState.UNKNOWN))
    states = {t.state for t in tasks.values()}
    state = next(s for s in _ARRAY_PRECEDENCE if s in states)
    reasons = sorted({t.reason for t in tasks.values() if t.state == state and t.reason})
    exit_code = None
    if all(t.state.final for t in tasks.values()):
        exit_code = max((t.exit_code or 0 for t in tasks.values()), default=0)
    return JobStatus(
        job_id=job_id,
        state=state,
        reason=",".join(reasons),
        exit_code=exit_code,
        elapsed_seconds=sum(t.elapsed_seconds for t in tasks.values()),
        tasks=tasks,
    )
