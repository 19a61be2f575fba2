"""The `local` registry entry: every job and sweep cell is a real, detached child process on
the portal host running `python -m launcher.workloads.ctxray train ...` in its own folder
under settings.VAR_DIR/local-jobs (see cells.py for the layout and supervisor.py for the
process). What `make run` uses.

- submit: writes the job folder (idempotent by token: a retry finds the first folder and its
  processes) and starts what fits in the facility's slots; the rest waits `pending` with the
  reason, and starts on a later submit or poll as slots free up. It waits (at most
  `LOCAL_START_WAIT_SECONDS`) for the started supervisors' pid.json and returns every cell's
  state in `Submission.observed`, so a started job is `running` when the submit task returns,
  not on the next poll.
- observe: each cell's files (pid + /proc start time, exit.json); a process gone without an
  exit status is `failed` with the reason, and charged for the time it was seen running (each
  observe of a running cell writes seen.json; see cells.record_vanished). Also starts waiting
  cells (the monitor's beat poll drives the queue).
- the wall time is a hard limit: SIGTERM at it, SIGKILL `LOCAL_KILL_AFTER_SECONDS` later
  (supervisor.py), and a cell is charged at most its limit (accounting.py).
- cancel: SIGTERM, on which the trainer checkpoints and exits.
- usage: the measured wall time x the job's GPUs (or CPU slots), once per cell.
"""

from __future__ import annotations

import datetime as dt
import math
import sys
import time
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from allocations.models import Allocation, Facility, UsageRecord

from .. import bundles
from ..backends.contract import (
    AccountSynced,
    BackendError,
    BaseBackend,
    Capability,
    Capacity,
    Fetched,
    Observation,
    Provisioned,
    Submission,
)
from ..models import Job
from . import cells, identity
from .notebooks import LocalNotebooks
from .places import (
    cell_dir,
    facility_dir,
    facility_slots,
    job_dir,
    live_sessions,
    local_project_folder,
    prepare_project_folder,
    resolve_local,
)

S = Job.State
CHECKPOINT_EXIT = 75
# Finished jobs are looked at for this long (a cancelled cell's exit.json comes after the move).
RECENT = dt.timedelta(days=1)


def limit_seconds(wall_time_minutes: int) -> float:
    """A cell's hard limit: its wall time, in settings.LOCAL_SECONDS_PER_MINUTE seconds a
    minute (60; tests shrink it)."""
    return wall_time_minutes * float(getattr(settings, "LOCAL_SECONDS_PER_MINUTE", 60))


def cell_argv(job: Job, data: str) -> list[str]:
    """The command of one cell: the trainer itself, or torchrun with one process per GPU."""
    cell = bundles.single_cell(job.params)
    cell.pop("index", None)
    args = [
        *bundles.cell_argv(cell, data, "out"),
        "--resume",
        "--device",
        "auto",
        *bundles.data_root_args(job.params),
    ]
    module = ["-m", "launcher.workloads.ctxray"]
    if job.gpus > 1:
        return [
            _python(),
            "-m",
            "torch.distributed.run",
            "--standalone",
            f"--nproc_per_node={job.gpus}",
            *module,
            *args,
        ]
    return [_python(), *module, *args]


def _python() -> str:
    return sys.executable


class LocalBackend(LocalNotebooks, BaseBackend):
    """Jobs as local processes, at most the facility's slots at once."""

    name = "local"
    label = "Local processes"
    usage_source = "local"
    capabilities = frozenset(
        {
            Capability.PROVISION,
            Capability.ACCOUNT_SYNC,
            Capability.SUBMIT,
            Capability.OBSERVE,
            Capability.FETCH,
            Capability.CANCEL,
            Capability.USAGE,
            Capability.DATA_PATHS,
            Capability.CAPACITY,
            Capability.NOTEBOOK,
        }
    )

    def capacity(self, *, facility: Facility) -> Capacity:
        """The facility's slots and the cells running or starting in them now (file reads)."""
        slots = facility_slots(facility)
        folder = facility_dir(facility)
        busy = cells.slots_in_use(folder) + len(cells.claimed(folder, live_sessions(facility)))
        return Capacity(slots=slots, in_use=min(busy, slots))

    def resolve_data_path(self, *, facility: Facility, project_code: str, location: str) -> str:
        """Resolved on this machine, where the jobs run (os.path.realpath follows every
        symlink); `storage_root` defaults to var/project-data. PathRefused when the folder is
        missing or lands outside the project's folder."""
        return resolve_local(facility, project_code, location)

    def provision(self, *, allocation: Allocation) -> Provisioned:
        """Nothing to create on the host: the allocation's default name, active at once."""
        return Provisioned(account=allocation.default_account_name())

    def sync_account(self, *, allocation: Allocation) -> AccountSynced:
        """No account on the host; while the allocation may not be used (Allocation.BLOCKED)
        its running and waiting cells are stopped, as Slurm's blocked account cancels jobs."""
        if allocation.status not in Allocation.BLOCKED:
            return AccountSynced(done="nothing to do")
        live = Job.objects.filter(allocation=allocation, state__in=Job.LIVE).exclude(
            scheduler_id=""
        )
        reason = f"stopped: the allocation is {allocation.get_status_display().lower()}"
        for job in live:
            cells.cancel(cell_dir(allocation.facility, job), reason=reason)
        return AccountSynced(done="stopped")

    def submit(self, *, facility: Facility, jobs: Sequence[Job], token: str) -> Submission:
        """Write the job folder and start what fits. Idempotent per token."""
        slots = facility_slots(facility)
        need = max(jobs[0].gpus, 1)
        if need > slots:
            raise BackendError(
                f"the job needs {need} slots but {facility.name} runs at most {slots} at once",
                permanent=True,
            )
        folder = job_dir(facility, token)
        data, synth = bundles.data_spec(jobs[0].params)
        if synth:
            data = str(folder / "data")
            synth = [str(folder / "data") if a == "data" else a for a in synth]
        run_as = identity.run_as_for(
            facility=facility, user=jobs[0].created_by, project_id=jobs[0].allocation.project_id
        )
        project = Path(local_project_folder(facility, jobs[0].allocation.project.code))
        if run_as and project.is_dir():  # its datasets: the project's group reads them
            prepare_project_folder(facility, project, jobs[0].allocation.project_id)
        with cells.facility_lock(facility_dir(facility)):
            wrote = cells.write_job(
                folder,
                token=token,
                data=data,
                synth=synth,
                pythonpath=str(settings.BASE_DIR),
                run_as=run_as.as_dict() if run_as else None,
                limits=(facility.backend_settings or {}).get("limits"),
                cells={
                    str(j.array_index or 0): {
                        "argv": cell_argv(j, data),
                        "slots": need,
                        "limit_seconds": limit_seconds(j.wall_time_minutes),
                        "kill_after_seconds": float(
                            getattr(settings, "LOCAL_KILL_AFTER_SECONDS", 30)
                        ),
                    }
                    for j in jobs
                },
            )
        held = _dispatch(facility, slots)
        return Submission(
            scheduler_id=token,
            workdir=str(folder),
            output_path=str(folder / "{index}" / cells.LOG),
            already_submitted=not wrote,
            observed=self._read(facility, jobs, slots, held, folder=folder),
        )

    def observe(self, *, facility: Facility, jobs: Sequence[Job]) -> dict[int, Observation]:
        """Start cells that now fit, then read every cell's files."""
        slots = facility_slots(facility)
        return self._read(facility, jobs, slots, _dispatch(facility, slots))

    def _read(
        self,
        facility: Facility,
        jobs: Sequence[Job],
        slots: int,
        held: set[int],
        *,
        folder: Path | None = None,
    ) -> dict[int, Observation]:
        """Each job's cell as its files say now (`held`: the slots notebook sessions hold,
        in use too; `folder`: the job folder just submitted, for jobs whose row does not carry
        it yet)."""
        in_use = cells.slots_in_use(facility_dir(facility)) + len(held)
        seen = {}
        for job in jobs:
            where = folder / str(job.array_index or 0) if folder else cell_dir(facility, job)
            state = cells.observe_cell(where)
            if state is not None:
                seen[job.pk] = _observation(state, where, in_use, slots)
        return seen

    def fetch(self, *, facility: Facility, job: Job) -> Fetched:
        """progress.json, the log tail and metrics.json from the cell's own folder."""
        folder = cell_dir(facility, job)
        return Fetched(
            progress=cells.read_json(folder / "out" / "progress.json"),
            log_tail=cells.tail(folder / cells.LOG),
            metrics=cells.read_json(folder / "out" / "metrics.json"),
        )

    def cancel(self, *, facility: Facility, jobs: Sequence[Job]) -> None:
        """SIGTERM to running cells (the trainer checkpoints and exits 75); waiting cells
        never start. Finished cells are no error."""
        for job in jobs:
            cells.cancel(cell_dir(facility, job))

    def usage(self, *, allocation: Allocation) -> list[UsageRecord]:
        """Each ended cell's wall time (measured by its supervisor on the monotonic clock, at
        most its limit; for a vanished process the time it was seen running) x the job's GPUs
        (or CPU slots), as one unsaved UsageRecord with source `local`, unique by its external
        id (facility pk and job token, never a name that can change; file reads only)."""
        facility = allocation.facility
        jobs = (
            Job.objects.filter(allocation=allocation)
            .exclude(scheduler_id="")
            .filter(Q(state__in=Job.LIVE) | Q(finished_at__gte=timezone.now() - RECENT))
            .only("pk", "token", "array_index", "gpus", "workdir")
        )
        rate = facility.gpu_hour_rate
        records = []
        for job in jobs:
            ended = cells.read_exit(cell_dir(facility, job))
            if ended is None:
                continue
            elapsed = float(ended.get("elapsed_seconds") or 0)
            slots = max(job.gpus, 1)
            gpu_seconds = charged_seconds(ended) * slots
            records.append(
                UsageRecord(
                    allocation_id=allocation.pk,
                    source=self.usage_source,
                    external_id=external_id(allocation, job),
                    period_start=dt.datetime.fromtimestamp(ended["started_at"], tz=dt.UTC),
                    period_end=dt.datetime.fromtimestamp(ended["ended_at"], tz=dt.UTC),
                    gpu_seconds=gpu_seconds,
                    cost=(Decimal(gpu_seconds) / 3600 * rate).quantize(Decimal("0.0001")),
                    job_id=job.pk,  # replaces the job's reservation in the ledger
                    detail={
                        "job_id": job.pk,
                        "elapsed_seconds": elapsed,
                        "slots": slots,
                        "exit_code": ended.get("exit_code"),
                        "vanished": bool(ended.get("vanished")),
                        "folder_gone": bool(ended.get("folder_gone")),
                    },
                )
            )
        return records


def _dispatch(facility: Facility, slots: int) -> set[int]:
    """Start the waiting cells that fit beside the slots notebook sessions hold, and wait
    briefly for their supervisors to say they run (settings.LOCAL_START_WAIT_SECONDS, 5 s by
    default: a Python start on a loaded machine). Returns the sessions' slots (one query)."""
    folder = facility_dir(facility)
    held = cells.claimed(folder, live_sessions(facility))
    started = cells.dispatch(folder, slots=slots, held=held)
    cells.wait_started(started, timeout=float(getattr(settings, "LOCAL_START_WAIT_SECONDS", 5)))
    return held


def external_id(allocation: Allocation, job: Job) -> str:
    """Stable: the facility's pk and the job's token (a slug may be renamed)."""
    return f"{allocation.facility_id}/{job.token}:{job.array_index or 0}"


def charged_seconds(ended: dict) -> int:
    """A cell's charged seconds: its measured wall time, rounded up, at most its limit."""
    elapsed = math.ceil(float(ended.get("elapsed_seconds") or 0))
    limit = ended.get("limit_seconds")
    return min(elapsed, math.ceil(float(limit))) if limit else elapsed


def _observation(state: cells.CellState, folder: Path, in_use: int, slots: int) -> Observation:
    if state.phase == "waiting":
        return Observation(
            state=S.PENDING, reason=f"waiting for a free slot ({in_use} of {slots} in use)"
        )
    if state.phase == "starting":
        return Observation(state=S.PENDING, reason="starting")
    if state.phase == "running":
        return Observation(
            state=S.RUNNING, elapsed_seconds=int(time.time() - (state.started_at or time.time()))
        )
    if state.phase == "vanished":
        what = f"pid {state.pid}" if state.pid else "the process"
        return Observation(
            state=S.FAILED,
            reason=f"the process vanished: {what} is gone and "
            "left no exit status (killed, or the host restarted)",
        )
    ended = state.exit or {}
    if ended.get("folder_gone"):
        return Observation(
            state=S.FAILED,
            exit_code=ended.get("exit_code"),
            elapsed_seconds=math.ceil(float(ended.get("elapsed_seconds") or 0)),
            reason="the job's folder was deleted while it ran; it is charged "
            "from the supervisor's own record of its start and end",
        )
    if ended.get("vanished"):
        return _observation(
            cells.CellState("vanished", pid=ended.get("pid")), folder, in_use, slots
        )
    code = int(ended.get("exit_code", 1))
    elapsed = math.ceil(float(ended.get("elapsed_seconds") or 0))
    if (folder / cells.CANCEL).exists():
        reason = (folder / cells.CANCEL).read_text().strip() or "cancelled"
        return Observation(
            state=S.CANCELLED, reason=reason, exit_code=code, elapsed_seconds=elapsed
        )
    if ended.get("timed_out"):
        return Observation(
            state=S.TIMEOUT,
            reason="stopped at its wall-time limit"
            + (" after a checkpoint" if code == CHECKPOINT_EXIT else ""),
            exit_code=code,
            elapsed_seconds=elapsed,
        )
    if code == 0:
        return Observation(state=S.SUCCEEDED, exit_code=0, elapsed_seconds=elapsed)
    reason = (
        f"stopped by a signal after a checkpoint (exit {code})"
        if code == CHECKPOINT_EXIT
        else f"exit code {code}"
    )
    return Observation(state=S.FAILED, reason=reason, exit_code=code, elapsed_seconds=elapsed)
