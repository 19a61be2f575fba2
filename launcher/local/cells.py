"""The local backend's job folders: the whole of its scheduler state lives in files, so a
worker restart (or a second worker) finds every job where the first left it.

    <root>/<facility>/<token>/token        the job's token (submission is idempotent by it)
    <root>/<facility>/<token>/spec.json    each cell's argv and slots, the data spec, when
    <root>/<facility>/<token>/data/        the synthetic dataset, made once, shared by cells
    <root>/<facility>/<token>/<index>/     one cell's own working directory:
        launch.json  the dispatcher started it (written before the spawn)
        pid.json     the supervisor's pid and /proc start time
        exit.json    how it ended: exit code, elapsed seconds (what is charged, at most the
                     limit); for a vanished process the portal writes it (`vanished`)
        seen.json    when the portal last saw the process running
        cancel       cancel asked; log.txt; out/ (progress.json, metrics.json, checkpoint.pt)
    <root>/<facility>/.ledger/<token>.<index>.json   the supervisor's own record of the cell
                 (started, alive_at, the end), outside the job folder: what is charged when
                 the job folder is gone

Where the work runs as a member (spec.json `run_as`): the job and cell folders are the
portal's (0711: the member passes through, cannot list, create or delete), `out/` and `data/`
are the member's (0700), the ledger is the portal's alone (0700).

Dispatch runs under a per-facility lock: cells start in submission order while their slots fit.
No Django here (the runner passes paths and numbers).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .supervisor import (
    CANCEL,
    EXIT,
    LEDGER,
    LOG,
    PID,
    SPEC,
    ledger_path,
    proc_start_ticks,
    write_json,
)

LAUNCH = "launch.json"
# A cell launched this long ago with no pid.json never started (its spawner died first).
START_GRACE_SECONDS = 60


@dataclass(frozen=True)
class CellState:
    """What a cell's files say: `waiting` (for a slot), `starting`, `running`, `ended` or
    `vanished` (its process is gone and left no exit.json)."""

    phase: str
    exit: dict | None = None
    started_at: float | None = None
    pid: int | None = None


@contextlib.contextmanager
def facility_lock(facility_dir: Path) -> Iterator[None]:
    facility_dir.mkdir(parents=True, exist_ok=True)
    with open(facility_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _read(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def write_job(
    job_dir: Path,
    *,
    token: str,
    cells: dict[str, dict],
    data: str,
    synth: list[str] | None,
    pythonpath: str,
    run_as: dict | None = None,
    limits: dict | None = None,
) -> bool:
    """Write the job folder unless it exists already; True when this call wrote it. Call
    under the facility lock (so a retried submit sees the first one's folder). With `run_as`
    (contain.RunAs.as_dict) the member owns `out/` of each cell and the synthetic `data/`;
    everything else stays the portal's."""
    if (job_dir / SPEC).exists():
        return False
    # Private, like the Slurm job folder (chmod go-rwx): another account reads neither the data
    # nor the results; the member passes through folders it cannot change (0711).
    mode = 0o711 if run_as else 0o700
    for folder in (job_dir.parent.parent, job_dir.parent):
        folder.mkdir(parents=True, exist_ok=True)
        if run_as:
            folder.chmod(0o711)
    (job_dir.parent / LEDGER).mkdir(exist_ok=True, mode=0o700)
    job_dir.mkdir(exist_ok=True, mode=mode)
    job_dir.chmod(mode)
    (job_dir / "token").write_text(token)
    owned = [job_dir / index / "out" for index in cells]
    for index in cells:
        (job_dir / index).mkdir(exist_ok=True, mode=mode)
        (job_dir / index).chmod(mode)
    if synth:
        owned.append(Path(data))
    for folder in owned:
        folder.mkdir(exist_ok=True, mode=0o700)
        if run_as:
            os.chown(folder, int(run_as["uid"]), int(run_as["gid"]))
    write_json(
        job_dir / SPEC,
        {
            "token": token,
            "cells": cells,
            "data": data,
            "synth": synth,
            "pythonpath": pythonpath,
            "created": time.time(),
            "run_as": run_as,
            "limits": limits or {},
        },
    )
    return True


def read_exit(cell_dir: Path) -> dict | None:
    """How the cell ended: its exit.json, else the supervisor's ledger record of the end."""
    ended = _read(cell_dir / EXIT)
    if ended is None:
        record = _read(ledger_path(cell_dir))
        if record is not None and record.get("exit"):
            ended = {**record, "folder_gone": not cell_dir.is_dir()}
    return ended


def _from_ledger(cell_dir: Path) -> CellState | None:
    """A cell whose folder is gone, as the supervisor's ledger record tells it (None when
    there is no record either): ended, running (its supervisor still lives), or vanished and
    charged from its start to its last heartbeat."""
    record = _read(ledger_path(cell_dir))
    if record is None:
        return None
    if record.get("exit"):
        return CellState(
            "ended", exit={**record, "folder_gone": True}, started_at=record.get("started_at")
        )
    if (
        record.get("start_ticks") is not None
        and proc_start_ticks(record["pid"]) == record["start_ticks"]
    ):
        return CellState("running", started_at=record.get("started_at"), pid=record["pid"])
    started = float(record.get("started_at") or 0)
    last = max(started, float(record.get("alive_at") or started))
    ended = {
        "exit_code": None,
        "vanished": True,
        "folder_gone": True,
        "pid": record.get("pid"),
        "started_at": started,
        "ended_at": last,
        "elapsed_seconds": last - started,
        "timed_out": False,
        "limit_seconds": record.get("limit_seconds"),
    }
    return CellState("ended", exit=ended, started_at=started)


def read_cell(cell_dir: Path, *, now: float | None = None) -> CellState | None:
    """The cell's state from its files (from the supervisor's ledger record when the folder
    is gone; None when neither exists)."""
    if not cell_dir.is_dir():
        return _from_ledger(cell_dir)
    ended = _read(cell_dir / EXIT)
    if ended is not None:
        return CellState("ended", exit=ended, started_at=ended.get("started_at"))
    pid = _read(cell_dir / PID)
    if pid is not None:
        if (
            pid.get("start_ticks") is not None
            and proc_start_ticks(pid["pid"]) == pid["start_ticks"]
        ):
            return CellState("running", started_at=pid.get("started_at"), pid=pid["pid"])
        ended = _read(cell_dir / EXIT)  # it may have finished between the two reads
        if ended is not None:
            return CellState("ended", exit=ended, started_at=ended.get("started_at"))
        return CellState("vanished", started_at=pid.get("started_at"), pid=pid["pid"])
    launched = _read(cell_dir / LAUNCH)
    if launched is not None:
        age = (now or time.time()) - launched.get("at", 0)
        return CellState("starting" if age < START_GRACE_SECONDS else "vanished")
    return CellState("waiting")


SEEN = "seen.json"


def observe_cell(cell_dir: Path) -> CellState | None:
    """read_cell, and what the portal saw: a running cell's seen.json is refreshed; a vanished
    one gets the exit.json its supervisor could not write (record_vanished), so it is charged."""
    state = read_cell(cell_dir)
    if state is not None and state.phase == "running" and not cell_dir.is_dir():
        cancel(cell_dir)  # its folder, results and checkpoints are gone: stop what is left
    elif state is not None and state.phase == "running":
        write_json(cell_dir / SEEN, {"at": time.time()})
    elif state is not None and state.phase == "vanished" and state.started_at is not None:
        state = CellState(
            "ended",
            exit=record_vanished(cell_dir, state),
            started_at=state.started_at,
            pid=state.pid,
        )
    return state


def record_vanished(cell_dir: Path, state: CellState) -> dict:
    """Write exit.json for a process that is gone without one: it ran from its start until it
    was last seen running (seen.json, or the last write to its log or progress file), at most
    its limit. Returns what was written."""
    seen = [
        state.started_at or 0.0,
        float((_read(cell_dir / SEEN) or {}).get("at") or 0),
        float((_read(ledger_path(cell_dir)) or {}).get("alive_at") or 0),
    ]
    for path in (cell_dir / LOG, cell_dir / "out" / "progress.json"):
        with contextlib.suppress(OSError):
            seen.append(path.stat().st_mtime)
    last = max(seen)
    ended = {
        "exit_code": None,
        "vanished": True,
        "pid": state.pid,
        "started_at": state.started_at,
        "ended_at": last,
        "elapsed_seconds": max(0.0, last - (state.started_at or last)),
        "timed_out": False,
        "limit_seconds": _limit(cell_dir),
    }
    write_json(cell_dir / EXIT, ended)
    return ended


def _limit(cell_dir: Path) -> float | None:
    spec = _read(cell_dir.parent / SPEC) or {}
    return (spec.get("cells", {}).get(cell_dir.name) or {}).get("limit_seconds")


def _devices(cells: list[tuple[float, int, Path, int]], states: dict, slots: int) -> list[int]:
    """The slot indices (CUDA_VISIBLE_DEVICES) no starting or running cell holds."""
    held: set[int] = set()
    for _, _, cell_dir, _ in cells:
        state = states[cell_dir]
        if state is not None and state.phase in ("starting", "running"):
            launched = _read(cell_dir / LAUNCH) or {}
            held.update(int(i) for i in (launched.get("devices") or "").split(",") if i != "")
    return [index for index in range(slots) if index not in held]


def _cells(facility_dir: Path) -> list[tuple[float, int, Path, int]]:
    """Every cell of every job folder: (created, index, cell dir, slots)."""
    found = []
    for spec_path in facility_dir.glob(f"*/{SPEC}"):
        spec = _read(spec_path)
        if spec is None:
            continue
        for index, cell in spec["cells"].items():
            found.append(
                (spec["created"], int(index), spec_path.parent / index, int(cell.get("slots", 1)))
            )
    return sorted(found)


def slots_in_use(facility_dir: Path) -> int:
    return sum(
        slots
        for _, _, cell_dir, slots in _cells(facility_dir)
        if (state := read_cell(cell_dir)) and state.phase in ("starting", "running")
    )


CLAIMS = ".devices"  # <facility>/.devices/<owner>.json: slots a notebook session holds


def claimed(facility_dir: Path, live: set[str]) -> set[int]:
    """The slot indices that the `live` owners' claims hold (claims of others are stale)."""
    held: set[int] = set()
    for owner in live:
        claim = _read(facility_dir / CLAIMS / f"{owner}.json") or {}
        held.update(int(i) for i in str(claim.get("devices", "")).split(",") if i != "")
    return held


def claim_devices(
    facility_dir: Path, *, owner: str, need: int, slots: int, live: set[str]
) -> str | None:
    """`need` slot indices for `owner` (a notebook session) that no starting or running cell
    and no other `live` owner's claim holds, claimed in a file under the facility lock (so a job
    dispatched next skips them); the same claim again for the same owner. None when too few
    are free. Returns the indices as CUDA_VISIBLE_DEVICES."""
    path = facility_dir / CLAIMS / f"{owner}.json"
    with facility_lock(facility_dir):
        mine = _read(path)
        if mine is not None:
            return str(mine.get("devices", ""))
        cells = _cells(facility_dir)
        states = {cell_dir: read_cell(cell_dir) for _, _, cell_dir, _ in cells}
        held = claimed(facility_dir, live - {owner})
        free = [i for i in _devices(cells, states, slots) if i not in held]
        if len(free) < need:
            return None
        path.parent.mkdir(exist_ok=True, mode=0o700)
        devices = ",".join(str(i) for i in free[:need])
        write_json(path, {"devices": devices, "at": time.time()})
        return devices


def dispatch(facility_dir: Path, *, slots: int, held: set[int] | None = None) -> list[Path]:
    """Start waiting cells, oldest first, while their slots fit in `slots` (a cell never
    jumps the queue past an older one that does not fit yet), leaving alone the slot indices
    in `held` (notebook sessions' claims). Returns the cells started."""
    started = []
    held = held or set()
    with facility_lock(facility_dir):
        cells = _cells(facility_dir)
        states = {cell_dir: read_cell(cell_dir) for _, _, cell_dir, _ in cells}
        used = len(held) + sum(
            need
            for _, _, d, need in cells
            if (state := states[d]) is not None and state.phase in ("starting", "running")
        )
        free = [i for i in _devices(cells, states, slots) if i not in held]
        for _, _, cell_dir, need in cells:
            state = states[cell_dir]
            if state is None or state.phase != "waiting" or (cell_dir / CANCEL).exists():
                continue
            if used + need > slots or len(free) < need:
                break
            mine, free = free[:need], free[need:]
            # The slots this cell holds, exclusively: its CUDA_VISIBLE_DEVICES.
            write_json(
                cell_dir / LAUNCH, {"at": time.time(), "devices": ",".join(str(i) for i in mine)}
            )
            spawn(cell_dir)
            used += need
            started.append(cell_dir)
    return started


def wait_started(cell_dirs: list[Path], *, timeout: float) -> None:
    """Wait (at most `timeout` seconds) until each just-dispatched cell's supervisor has
    written its pid.json (or ended): then read_cell says `running`, not `starting`, and the
    submit or poll that started it can report so at once instead of on the next poll."""
    deadline = time.monotonic() + timeout
    pending = list(cell_dirs)
    while pending and time.monotonic() < deadline:
        pending = [
            d for d in pending if (state := read_cell(d)) is not None and state.phase == "starting"
        ]
        if pending:
            time.sleep(0.02)


def spawn(cell_dir: Path) -> None:
    """Start the cell's supervisor detached: its own session, double-forked (the direct child
    exits at once and is reaped here), so neither a worker restart nor a worker's exit stops it."""
    root = str(Path(__file__).resolve().parents[2])
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "launcher.local.supervisor", str(cell_dir)],
        cwd=cell_dir,
        env=env,
        start_new_session=True,
        umask=0o077,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    proc.wait()


def cancel(cell_dir: Path, *, reason: str = "cancelled") -> None:
    """Mark the cell cancelled with `reason` (a waiting cell never starts) and send SIGTERM to
    a running one's supervisor, which passes it to the trainer: it checkpoints and exits 75.
    Idempotent; an ended cell is left as it is."""
    if not cell_dir.is_dir():
        state = _from_ledger(cell_dir)  # the folder is gone: stop its supervisor all the same
        if state is not None and state.phase == "running" and state.pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(state.pid, signal.SIGTERM)
        return
    if (cell_dir / EXIT).exists():
        return
    if not (cell_dir / CANCEL).exists():
        (cell_dir / CANCEL).write_text(reason)
    state = read_cell(cell_dir)
    if state is not None and state.phase == "running" and state.pid:
        with contextlib.suppress(ProcessLookupError):
            os.kill(state.pid, signal.SIGTERM)


def tail(path: Path, *, lines: int = 60, max_bytes: int = 65536) -> str | None:
    """The last `lines` lines of a text file, or None when it does not exist."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - max_bytes))
            data = handle.read()
    except OSError:
        return None
    return "\n".join(data.decode("utf-8", "replace").splitlines()[-lines:])


def read_json(path: Path) -> dict | None:
    """A JSON file's content, or None (absent, or being replaced right now)."""
    return _read(path)


__all__ = [
    "CANCEL",
    "EXIT",
    "LEDGER",
    "LOG",
    "PID",
    "SEEN",
    "CellState",
    "cancel",
    "claim_devices",
    "claimed",
    "dispatch",
    "observe_cell",
    "read_cell",
    "read_exit",
    "read_json",
    "record_vanished",
    "slots_in_use",
    "tail",
    "wait_started",
    "write_job",
]
