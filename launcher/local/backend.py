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
import os
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
from ..backends.base import BackendError, PathRefused, confined, project_folder
from ..backends.registry import BaseBackend, Capability
from ..models import Job
from ..notebooks.models import NotebookSession
from ..runners import Capacity, Fetched, NotebookUsage, Observation, Submission
from ..notebooks.selectors import notebook_datasets
from . import cells

S = Job.State
CHECKPOINT_EXIT = 75
DEFAULT_SLOTS = 2
# Finished jobs are looked at for this long (a cancelled cell's exit.json comes after the move).
RECENT = dt.timedelta(days=1)


def jobs_root() -> Path:
    return Path(getattr(settings, "LOCAL_JOBS_DIR", "") or settings.VAR_DIR / "local-jobs")


def facility_dir(facility: Facility) -> Path:
    return jobs_root() / facility.slug


def job_dir(facility: Facility, token: str) -> Path:
    return facility_dir(facility) / token


def cell_dir(facility: Facility, job: Job) -> Path:
    return Path(job.workdir or job_dir(facility, job.token)) / str(job.array_index or 0)


def facility_slots(facility: Facility) -> int:
    """How many GPUs (or CPU slots) run at once: `slots` in the facility's backend settings,
    else its largest node type's accelerators, else settings.LOCAL_JOB_SLOTS."""
    configured = (facility.backend_settings or {}).get("slots")
    if configured:
        return max(int(configured), 1)
    per_node = list(facility.node_types.order_by().values_list("accelerators_per_node", flat=True))
    return max(per_node or [int(getattr(settings, "LOCAL_JOB_SLOTS", DEFAULT_SLOTS))])


def limit_seconds(wall_time_minutes: int) -> float:
    """A cell's hard limit: its wall time, in settings.LOCAL_SECONDS_PER_MINUTE seconds a
    minute (60; tests shrink it)."""
    return wall_time_minutes * float(getattr(settings, "LOCAL_SECONDS_PER_MINUTE", 60))


def cell_argv(job: Job, data: str) -> list[str]:
    """The command of one cell: the trainer itself, or torchrun with one process per GPU."""
    cell = bundles.single_cell(job.params)
    cell.pop("index", None)
    args = [*bundles.cell_argv(cell, data, "out"), "--resume", "--device", "auto",
            *bundles.data_root_args(job.params)]
    module = ["-m", "launcher.workloads.ctxray"]
    if job.gpus > 1:
        return [_python(), "-m", "torch.distributed.run", "--standalone",
                f"--nproc_per_node={job.gpus}", *module, *args]
    return [_python(), *module, *args]


def _python() -> str:
    return sys.executable


def local_project_folder(facility: Facility, project_code: str) -> str:
    """`<storage_root or var/project-data>/<project code>` on this machine, absolute."""
    root = project_folder(facility.backend_settings, project_code,
                          default_root=str(settings.VAR_DIR / "project-data"))
    return root if os.path.isabs(root) else os.path.join(str(settings.BASE_DIR), root)


def resolve_local(facility: Facility, project_code: str, location: str) -> str:
    """`location` in the project's folder on this machine, every symlink followed and
    confined (LocalBackend.resolve_data_path)."""
    root = local_project_folder(facility, project_code)
    path = os.path.join(root, location)
    if not os.path.isdir(root):
        raise PathRefused("the project has no folder in this facility's storage yet")
    real_root, real = os.path.realpath(root), os.path.realpath(path)
    if not os.path.exists(real):
        raise PathRefused("no such folder in the project's storage")
    if not confined(real_root, real):
        raise PathRefused("it resolves to a place outside the project's folder (a symlink?)")
    return real


def notebook_run_dir(session: NotebookSession) -> Path:
    """A session's own folder (the supervisor's record.json and the server's log)."""
    return Path(settings.NOTEBOOKS_DIR) / str(session.pk)


class LocalNotebooks:
    """The `notebook` capability of the local backend (mixed into LocalBackend): the hub's
    LocalNotebookSpawner runs jupyterhub-singleuser under a supervisor that writes
    `<run_dir>/record.json` and stops the server at `hours`."""

    def notebook_options(self, *, allocation: Allocation, session: NotebookSession) -> dict:
        """workdir `<project folder>/notebooks/<username>` (created; it outlives the session),
        run_dir `settings.NOTEBOOKS_DIR/<session id>` (created), the project's datasets
        resolved and confined as a job's are (launcher.notebooks.selectors.notebook_datasets), and
        the GPU indices handed to the server (CUDA_VISIBLE_DEVICES; "" with no GPU)."""
        facility = allocation.facility
        code = allocation.project.code
        workdir = Path(local_project_folder(facility, code)) / "notebooks" / session.user.get_username()
        run_dir = notebook_run_dir(session)
        try:
            workdir.mkdir(parents=True, exist_ok=True)
            run_dir.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise BackendError(f"cannot create the notebook's folders: {error}", permanent=True) from error
        datasets, left_out = notebook_datasets(
            allocation=allocation,
            resolve=lambda location: resolve_local(facility, code, location))
        return {"workdir": str(workdir), "run_dir": str(run_dir), "datasets": datasets,
                "datasets_left_out": left_out,
                "cuda_visible_devices": ",".join(str(i) for i in range(session.gpus))}

    def notebook_usage(self, *, session: NotebookSession) -> NotebookUsage | None:
        """From `<run_dir>/record.json` ({"pid", "started", "ended", "exit", "reason"}, epoch
        seconds): wall seconds = ceil(ended - started); GPU-seconds = ceil((ended - started) x
        gpus), at most the reservation (the supervisor stops it at `hours`). None while there
        is no record; `ended` None while it runs."""
        record = cells.read_json(Path(session.run_dir or notebook_run_dir(session)) / "record.json")
        if not record or record.get("started") is None:
            return None
        started = float(record["started"])
        ended = record.get("ended")
        span = (float(ended) - started) if ended is not None else 0.0
        gpu_seconds = min(math.ceil(span * session.gpus), int(session.reserved_gpu_seconds)) \
            if session.gpus else 0
        return NotebookUsage(
            started=dt.datetime.fromtimestamp(started, tz=dt.timezone.utc),
            ended=dt.datetime.fromtimestamp(float(ended), tz=dt.timezone.utc) if ended is not None else None,
            gpu_seconds=gpu_seconds, wall_seconds=math.ceil(span),
            external_id=f"{session.allocation.facility_id}/nb-{session.pk}",
            reason=str(record.get("reason") or ""))


class LocalBackend(LocalNotebooks, BaseBackend):
    """Jobs as local processes, at most the facility's slots at once."""

    name = "local"
    capabilities = frozenset({
        Capability.PROVISION, Capability.ACCOUNT_SYNC, Capability.SUBMIT, Capability.OBSERVE,
        Capability.FETCH, Capability.CANCEL, Capability.USAGE, Capability.DATA_PATHS,
        Capability.CAPACITY, Capability.NOTEBOOK})

    def capacity(self, *, facility: Facility) -> Capacity:
        """The facility's slots and the cells running or starting in them now (file reads)."""
        slots = facility_slots(facility)
        return Capacity(slots=slots, in_use=min(cells.slots_in_use(facility_dir(facility)), slots))

    def resolve_data_path(self, *, facility: Facility, project_code: str, location: str) -> str:
        """Resolved on this machine, where the jobs run (os.path.realpath follows every
        symlink); `storage_root` defaults to var/project-data. PathRefused when the folder is
        missing or lands outside the project's folder."""
        return resolve_local(facility, project_code, location)

    def provision(self, *, allocation: Allocation) -> str:
        """Nothing to create on the host: the allocation's default name, active at once."""
        return allocation.default_account_name()

    def sync_account(self, *, allocation: Allocation) -> str:
        """No account on the host; while the allocation may not be used (Allocation.BLOCKED)
        its running and waiting cells are stopped, as Slurm's blocked account cancels jobs."""
        if allocation.status not in Allocation.BLOCKED:
            return "nothing to do"
        live = Job.objects.filter(allocation=allocation, state__in=Job.LIVE).exclude(scheduler_id="")
        reason = f"stopped: the allocation is {allocation.get_status_display().lower()}"
        for job in live:
            cells.cancel(cell_dir(allocation.facility, job), reason=reason)
        return "stopped"

    def submit(self, *, facility: Facility, jobs: Sequence[Job], token: str) -> Submission:
        """Write the job folder and start what fits. Idempotent per token."""
        slots = facility_slots(facility)
        need = max(jobs[0].gpus, 1)
        if need > slots:
            raise BackendError(f"the job needs {need} slots but {facility.name} runs at most "
                               f"{slots} at once", permanent=True)
        folder = job_dir(facility, token)
        data, synth = bundles.data_spec(jobs[0].params)
        if synth:
            data = str(folder / "data")
            synth = [str(folder / "data") if a == "data" else a for a in synth]
        with cells.facility_lock(facility_dir(facility)):
            wrote = cells.write_job(
                folder, token=token, data=data, synth=synth, pythonpath=str(settings.BASE_DIR),
                cells={str(j.array_index or 0): {
                    "argv": cell_argv(j, data), "slots": need,
                    "limit_seconds": limit_seconds(j.wall_time_minutes),
                    "kill_after_seconds": float(getattr(settings, "LOCAL_KILL_AFTER_SECONDS", 30)),
                } for j in jobs})
        _dispatch(facility, slots)
        return Submission(scheduler_id=token, workdir=str(folder),
                          output_path=str(folder / "{index}" / cells.LOG),
                          already_submitted=not wrote,
                          observed=self._read(facility, jobs, slots, folder=folder))

    def observe(self, *, facility: Facility, jobs: Sequence[Job]) -> dict[int, Observation]:
        """Start cells that now fit, then read every cell's files."""
        slots = facility_slots(facility)
        _dispatch(facility, slots)
        return self._read(facility, jobs, slots)

    def _read(self, facility: Facility, jobs: Sequence[Job], slots: int, *,
              folder: Path | None = None) -> dict[int, Observation]:
        """Each job's cell as its files say now (`folder`: the job folder just submitted, for
        jobs whose row does not carry it yet)."""
        in_use = cells.slots_in_use(facility_dir(facility))
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
        return Fetched(progress=cells.read_json(folder / "out" / "progress.json"),
                       log_tail=cells.tail(folder / cells.LOG),
                       metrics=cells.read_json(folder / "out" / "metrics.json"))

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
        jobs = Job.objects.filter(allocation=allocation).exclude(scheduler_id="").filter(
            Q(state__in=Job.LIVE) | Q(finished_at__gte=timezone.now() - RECENT)).only(
            "pk", "token", "array_index", "gpus", "workdir")
        rate = facility.gpu_hour_rate
        records = []
        for job in jobs:
            ended = cells.read_json(cell_dir(facility, job) / cells.EXIT)
            if ended is None:
                continue
            elapsed = float(ended.get("elapsed_seconds") or 0)
            slots = max(job.gpus, 1)
            gpu_seconds = charged_seconds(ended) * slots
            records.append(UsageRecord(
                allocation_id=allocation.pk, source=UsageRecord.Source.LOCAL,
                external_id=external_id(allocation, job),
                period_start=dt.datetime.fromtimestamp(ended["started_at"], tz=dt.timezone.utc),
                period_end=dt.datetime.fromtimestamp(ended["ended_at"], tz=dt.timezone.utc),
                gpu_seconds=gpu_seconds,
                cost=(Decimal(gpu_seconds) / 3600 * rate).quantize(Decimal("0.0001")),
                job_id=job.pk,  # replaces the job's reservation in the ledger
                detail={"job_id": job.pk, "elapsed_seconds": elapsed, "slots": slots,
                        "exit_code": ended.get("exit_code"),
                        "vanished": bool(ended.get("vanished"))}))
        return records


def _dispatch(facility: Facility, slots: int) -> None:
    """Start the waiting cells that fit, and wait briefly for their supervisors to say they
    run (settings.LOCAL_START_WAIT_SECONDS, 5 s by default: a Python start on a loaded machine)."""
    started = cells.dispatch(facility_dir(facility), slots=slots)
    cells.wait_started(started, timeout=float(getattr(settings, "LOCAL_START_WAIT_SECONDS", 5)))


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
        return Observation(state=S.PENDING, reason=f"waiting for a free slot ({in_use} of "
                                                   f"{slots} in use)")
    if state.phase == "starting":
        return Observation(state=S.PENDING, reason="starting")
    if state.phase == "running":
        return Observation(state=S.RUNNING,
                           elapsed_seconds=int(time.time() - (state.started_at or time.time())))
    if state.phase == "vanished":
        what = f"pid {state.pid}" if state.pid else "the process"
        return Observation(state=S.FAILED, reason=f"the process vanished: {what} is gone and "
                           "left no exit status (killed, or the host restarted)")
    ended = state.exit or {}
    if ended.get("vanished"):
        return _observation(cells.CellState("vanished", pid=ended.get("pid")), folder, in_use, slots)
    code = int(ended.get("exit_code", 1))
    elapsed = math.ceil(float(ended.get("elapsed_seconds") or 0))
    if (folder / cells.CANCEL).exists():
        reason = (folder / cells.CANCEL).read_text().strip() or "cancelled"
        return Observation(state=S.CANCELLED, reason=reason, exit_code=code,
                           elapsed_seconds=elapsed)
    if ended.get("timed_out"):
        return Observation(state=S.TIMEOUT, reason="stopped at its wall-time limit"
                           + (" after a checkpoint" if code == CHECKPOINT_EXIT else ""),
                           exit_code=code, elapsed_seconds=elapsed)
    if code == 0:
        return Observation(state=S.SUCCEEDED, exit_code=0, elapsed_seconds=elapsed)
    reason = (f"stopped by a signal after a checkpoint (exit {code})" if code == CHECKPOINT_EXIT
              else f"exit code {code}")
    return Observation(state=S.FAILED, reason=reason, exit_code=code, elapsed_seconds=elapsed)
