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
from pathlib import Path

PID, EXIT, CANCEL, LOG, SPEC = "pid.json", "exit.json", "cancel", "log.txt", "spec.json"
CANCELLED_EXIT = 143
KILL_AFTER_SECONDS = 30  # the default; settings.LOCAL_KILL_AFTER_SECONDS


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


def _synth(job_dir: Path, spec: dict, log) -> int:
    if not spec.get("synth"):
        return 0
    with open(job_dir / ".synth.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (Path(spec["data"]) / "dataset.json").exists():
            return 0
        return subprocess.run([sys.executable, "-m", "launcher.workloads.ctxray", "synth",
                               *spec["synth"]], cwd=job_dir, stdout=log, stderr=subprocess.STDOUT,
                              check=False).returncode


def run(cell_dir: Path) -> int:
    """Run the cell in `cell_dir` to its end; returns the exit code it recorded."""
    job_dir = cell_dir.parent
    spec = json.loads((job_dir / SPEC).read_text())
    cell = spec["cells"][cell_dir.name]
    me = os.getpid()
    write_json(cell_dir / PID, {"pid": me, "start_ticks": proc_start_ticks(me),
                                "started_at": time.time()})
    child: subprocess.Popen | None = None
    stop: list[int] = []
    timed_out = False

    def forward(signum, _frame):
        stop.append(signum)
        if child is not None and child.poll() is None:
            child.send_signal(signum)

    for sig in (signal.SIGTERM, signal.SIGUSR1, signal.SIGINT):
        signal.signal(sig, forward)
    started, began = time.time(), time.monotonic()
    with open(cell_dir / LOG, "ab", buffering=0) as log:
        code = CANCELLED_EXIT if (cell_dir / CANCEL).exists() else _synth(job_dir, spec, log)
        if code == 0 and not stop:
            log.write(f"portal: cell {cell_dir.name}: {' '.join(cell['argv'])}\n".encode())
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(
                p for p in (spec["pythonpath"], os.environ.get("PYTHONPATH", "")) if p)}
            started, began = time.time(), time.monotonic()
            child = subprocess.Popen(cell["argv"], cwd=cell_dir, stdout=log,
                                     stderr=subprocess.STDOUT, env=env, start_new_session=True)
            write_json(cell_dir / PID, {"pid": me, "start_ticks": proc_start_ticks(me),
                                        "started_at": started, "child_pid": child.pid})
            code, timed_out = _wait(child, cell.get("limit_seconds"),
                                    float(cell.get("kill_after_seconds", KILL_AFTER_SECONDS)))
            if code < 0:
                code = 128 - code  # killed by a signal: the shell's convention
        elif stop:
            code = CANCELLED_EXIT
    ended = time.time()
    elapsed = time.monotonic() - began if child is not None else 0.0
    write_json(cell_dir / EXIT, {"exit_code": code, "started_at": started, "ended_at": ended,
                                 "elapsed_seconds": elapsed, "signals": stop,
                                 "timed_out": timed_out, "limit_seconds": cell.get("limit_seconds")})
    return code


def _wait(child: subprocess.Popen, limit: float | None, kill_after: float) -> tuple[int, bool]:
    """The child's exit code, and whether it was stopped at its time limit: SIGTERM at the
    limit (the trainer checkpoints and exits 75), SIGKILL to its whole process group
    `kill_after` seconds later if it is still there."""
    try:
        return child.wait(timeout=limit), False
    except subprocess.TimeoutExpired:
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
