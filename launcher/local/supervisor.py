"""Run one cell of a local job and record how it ended (standard library only, no Django).

    python -m launcher.local.supervisor CELL_DIR

Started detached by the local runner (its own session, double-forked so no worker has to reap
it): a worker restart neither kills nor orphans the job. In CELL_DIR it

1. writes pid.json (its pid and /proc start time, so a reused pid is never mistaken for it);
2. makes the shared synthetic dataset once per job folder, under a lock (sweep cells share it);
3. runs the cell's argv (`python -m launcher.workloads.ctxray train ...`, or torchrun for
   several GPUs) with stdout and stderr in log.txt, forwarding SIGTERM/SIGUSR1/SIGINT to it:
   the trainer checkpoints on them and exits 75;
4. writes exit.json: exit code, start and end (wall clock) and the elapsed seconds measured on
   the monotonic clock, which is what the allocation is charged.

The trainer (and the synthetic data step) run as the member (spec.json `run_as`, contain.py),
with an environment built from nothing (no portal secret), under the facility's `limits`; the
supervisor stays the portal's. The cell folder and these records are the portal's: the member
writes only `out/` (and the job's `data/`). The same record is kept outside the job folder too,
in `<facility>/.ledger/<token>.<index>.json` (started, alive_at every HEARTBEAT seconds, and the
end), so a cell whose folder was deleted while it ran is still charged what it ran. The
supervisor is its descendants' subreaper: when the trainer ends, whatever it left running
(setsid or double-forked included) is killed.

A `cancel` file in CELL_DIR before the start means: do not run, record exit 143. At the cell's
`limit_seconds` (its wall time) the trainer gets SIGTERM, checkpoints and exits; exit.json then
says `timed_out`. A trainer still there `kill_after_seconds` later is killed with SIGKILL, with
every process of its group (torchrun's workers too): the hard stop that makes the wall time a
limit, as Slurm's --time is. exit.json carries `limit_seconds`: a cell is never charged more.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import BinaryIO

from . import contain

PID, EXIT, CANCEL, LOG, SPEC = "pid.json", "exit.json", "cancel", "log.txt", "spec.json"
CANCELLED_EXIT = 143
KILL_AFTER_SECONDS = 30  # the default; settings.LOCAL_KILL_AFTER_SECONDS
LEDGER = ".ledger"
HEARTBEAT = 10.0  # seconds between the supervisor's "still alive" marks in its ledger record


def ledger_path(cell_dir: Path) -> Path:
    """The supervisor's record of a cell outside the job folder (the portal's own folder)."""
    return cell_dir.parent.parent / LEDGER / f"{cell_dir.parent.name}.{cell_dir.name}.json"


def _ledger(cell_dir: Path, record: dict) -> None:
    try:
        write_json(ledger_path(cell_dir), record)
    except OSError:
        pass  # the facility folder itself is gone: nothing left to write to


def proc_start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat), or
    None if there is no such live process (gone, or a zombie)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def write_json(path: Path, data: dict) -> None:
    """Replace `path` atomically (readers never see half a file)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


def _member(spec: dict, cell_dir: Path, devices: str | None = None) -> dict:
    """Popen arguments for the member's process: its identity, a clean environment."""
    run_as = contain.RunAs.from_dict(spec.get("run_as"))
    extra = {"PYTHONPATH": spec["pythonpath"], "PYTHONUNBUFFERED": "1"}
    if devices is not None:
        extra["CUDA_VISIBLE_DEVICES"] = devices
    env = contain.member_env(run_as, path_prefix=os.path.dirname(sys.executable), **extra)
    if run_as is None:
        env["HOME"] = str(cell_dir)
    return {"env": env, **(run_as.popen_kwargs() if run_as else {})}


def _synth(job_dir: Path, spec: dict, log: BinaryIO, cell_dir: Path) -> int:
    if not spec.get("synth"):
        return 0
    with open(job_dir / ".synth.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (Path(spec["data"]) / "dataset.json").exists():
            return 0
        return subprocess.run(
            [sys.executable, "-m", "launcher.workloads.ctxray", "synth", *spec["synth"]],
            cwd=spec["data"],
            stdout=log,
            stderr=subprocess.STDOUT,
            check=False,
            **_member(spec, cell_dir),
        ).returncode


def run(cell_dir: Path) -> int:
    """Run the cell in `cell_dir` to its end; returns the exit code it recorded."""
    job_dir = cell_dir.parent
    spec = json.loads((job_dir / SPEC).read_text())
    cell = spec["cells"][cell_dir.name]
    me = os.getpid()
    contain.become_subreaper()
    contain.apply_limits(spec.get("limits"))
    mine = {"pid": me, "start_ticks": proc_start_ticks(me), "started_at": time.time()}
    write_json(cell_dir / PID, mine)
    _ledger(
        cell_dir,
        {**mine, "alive_at": mine["started_at"], "limit_seconds": cell.get("limit_seconds")},
    )
    launched = _read_json(cell_dir / "launch.json")
    devices = launched.get("devices") if launched else None
    child: subprocess.Popen | None = None
    stop: list[int] = []
    timed_out = False

    def forward(signum: int, _frame: FrameType | None) -> None:
        stop.append(signum)
        if child is not None and child.poll() is None:
            child.send_signal(signum)

    for sig in (signal.SIGTERM, signal.SIGUSR1, signal.SIGINT):
        signal.signal(sig, forward)
    started, began = time.time(), time.monotonic()
    with open(cell_dir / LOG, "ab", buffering=0) as log:
        code = (
            CANCELLED_EXIT if (cell_dir / CANCEL).exists() else _synth(job_dir, spec, log, cell_dir)
        )
        if code == 0 and not stop:
            log.write(f"portal: cell {cell_dir.name}: {' '.join(cell['argv'])}\n".encode())
            started, began = time.time(), time.monotonic()
            child = subprocess.Popen(
                cell["argv"],
                cwd=cell_dir,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                **_member(spec, cell_dir, devices),
            )
            mine = {
                "pid": me,
                "start_ticks": proc_start_ticks(me),
                "started_at": started,
                "child_pid": child.pid,
            }
            write_json(cell_dir / PID, mine)
            record = {**mine, "limit_seconds": cell.get("limit_seconds")}
            code, timed_out = _wait(
                child,
                cell.get("limit_seconds"),
                float(cell.get("kill_after_seconds", KILL_AFTER_SECONDS)),
                lambda: _ledger(cell_dir, {**record, "alive_at": time.time()}),
            )
            if code < 0:
                code = 128 - code  # killed by a signal: the shell's convention
        elif stop:
            code = CANCELLED_EXIT
    ended = time.time()
    elapsed = time.monotonic() - began if child is not None else 0.0
    contain.kill_tree()  # whatever the run left behind, escaped sessions included
    result = {
        "exit_code": code,
        "started_at": started,
        "ended_at": ended,
        "elapsed_seconds": elapsed,
        "signals": stop,
        "timed_out": timed_out,
        "limit_seconds": cell.get("limit_seconds"),
    }
    _ledger(cell_dir, {**result, "pid": me, "alive_at": ended, "exit": True})
    try:
        write_json(cell_dir / EXIT, result)
    except OSError:
        pass  # the cell's folder was deleted: the ledger record above is what is charged
    return code


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _wait(
    child: subprocess.Popen, limit: float | None, kill_after: float, alive: Callable[[], object]
) -> tuple[int, bool]:
    """The child's exit code, and whether it was stopped at its time limit: SIGTERM at the
    limit (the trainer checkpoints and exits 75), SIGKILL to its whole process group
    `kill_after` seconds later if it is still there. `alive()` every HEARTBEAT seconds."""
    deadline = time.monotonic() + limit if limit else None
    while True:
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            break
        try:
            return child.wait(timeout=HEARTBEAT if left is None else min(HEARTBEAT, left)), False
        except subprocess.TimeoutExpired:
            alive()
    child.send_signal(signal.SIGTERM)
    try:
        return child.wait(timeout=kill_after), True
    except subprocess.TimeoutExpired:
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        return child.wait(), True


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m launcher.local.supervisor CELL_DIR", file=sys.stderr)
        return 2
    if os.fork() > 0:
        os._exit(0)  # the spawner reaps this parent at once; the cell runs on, reparented
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    return run(Path(argv[0]).resolve())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
