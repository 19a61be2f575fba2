"""Launch -> running on `make run`'s embedded defaults (issue 22: a launched job took 9-10 s to
show `running`, the beat's poll interval, while the local backend knew at once).

The portal runs as `make run` runs it (SQLite, the filesystem Celery transport, a real
`celery worker -B`, runserver) in a throwaway var folder, on port 8102 (or BENCH_PORT). The
researcher's trial on `local` is made through the API; then, RUNS times, the default job is
launched (`POST /api/v1/jobs/ {"allocation": id}`), the API is read every 0.05 s until it says
`running`, and the job is cancelled and its process waited for (exit.json) before the next launch (`local` has one
slot). Two figures per run:

- launch -> running: from the POST's reply to the first GET showing `running` (what the user
  sees; includes the worker picking the submit task up from the filesystem queue);
- process -> running: the job's `started_at` (when the portal recorded `running`) less the
  `started_at` its supervisor wrote in pid.json when its process began: the target is < 1 s.

Each is also given as a fraction of the beat's poll interval (10 s), which bounded it before.

Run: python bench/bench_launch_running.py [--runs N]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PORT = int(os.environ.get("BENCH_PORT", "8102"))
BASE = f"http://127.0.0.1:{PORT}/api/v1"
POLL_INTERVAL_S = 10.0  # settings.CELERY_BEAT_SCHEDULE's launcher-poll-jobs


def call(method: str, path: str, token: str = "", body: dict | None = None) -> dict:
    request = urllib.request.Request(
        BASE + path,
        method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={
            "Content-Type": "application/json",
            **({"Authorization": f"Token {token}"} if token else {}),
        },
    )
    with urllib.request.urlopen(request, timeout=60) as reply:  # nosec B310 # fixed http://127.0.0.1 URL
        return json.loads(reply.read() or b"{}")


def until(predicate, timeout: float, what: str, interval: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise SystemExit(f"timed out waiting for {what}")


def trial_on_local(token: str) -> int:
    project = call("GET", "/projects/", token)["results"][0]["id"]
    today = dt.date.today()
    call(
        "POST",
        "/requests/",
        token,
        {
            "project": project,
            "facility": "local",
            "kind": "trial",
            "gpu_hours": 10,
            "start_date": today.isoformat(),
            "end_date": (today + dt.timedelta(days=30)).isoformat(),
            "data_sensitivity": "public",
            "justification": "Timing launch to running.",
            "submit": True,
        },
    )
    return until(
        lambda: next(
            (
                a["id"]
                for a in call("GET", "/allocations/", token)["results"]
                if a["facility"] == "local" and a["status"] == "active"
            ),
            None,
        ),
        120,
        "an active allocation on local",
        interval=0.5,
    )


def supervisor_start(var: Path, after: float) -> tuple[float, Path]:
    """The newest pid.json under var/local-jobs/local written after `after`: its started_at
    and its cell folder."""

    def newest():
        found = [
            (json.loads(p.read_text())["started_at"], p.parent)
            for p in (var / "local-jobs" / "local").glob("*/0/pid.json")
        ]
        return max((f for f in found if f[0] >= after), default=None)

    return until(newest, 30, "the supervisor's pid.json")


def one_run(token: str, allocation: int, var: Path) -> dict:
    wall0 = time.time()
    job = call("POST", "/jobs/", token, {"allocation": allocation})
    t0 = time.monotonic()
    state = until(
        lambda: (
            (s := call("GET", f"/jobs/{job['id']}/", token))["state"]
            in ("running", "succeeded", "failed")
            and s
        ),
        120,
        "running",
    )
    seen = time.monotonic() - t0
    started = dt.datetime.fromisoformat(state["started_at"].replace("Z", "+00:00")).timestamp()
    began, cell = supervisor_start(var, wall0 - 1)
    lag = started - began
    call("POST", f"/jobs/{job['id']}/cancel/", token, {})
    # The slot frees when the process has checkpointed and exited, not when the API says
    # `cancelled`: the next launch would wait for it (and for the poll that starts it).
    until(lambda: (cell / "exit.json").exists(), 180, "the cancelled process's exit", interval=0.2)
    return {
        "job": job["id"],
        "state": state["state"],
        "launch_to_running_s": seen,
        "process_to_running_s": lag,
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with demo_portal("bench-launch-running-") as var:
        token = call("POST", "/auth/token/", body={"username": "researcher", "password": "demo"})[
            "token"
        ]
        allocation = trial_on_local(token)
        rows = [one_run(token, allocation, var) for _ in range(args.runs)]
        print(
            f"launch -> running on make run's defaults (local facility, default job), "
            f"{os.cpu_count()} CPU cores, beat poll every {POLL_INTERVAL_S:g} s, API read every 0.05 s"
        )
        print(
            f"{'job':>4} {'state':<9} {'launch->running s':>18} {'/ poll':>7} "
            f"{'process->running s':>19} {'/ poll':>7}"
        )
        for r in rows:
            print(
                f"{r['job']:>4} {r['state']:<9} {r['launch_to_running_s']:>18.2f} "
                f"{r['launch_to_running_s'] / POLL_INTERVAL_S:>7.2f} "
                f"{r['process_to_running_s']:>19.2f} {r['process_to_running_s'] / POLL_INTERVAL_S:>7.2f}"
            )
        return 0


@contextlib.contextmanager
def demo_portal(prefix: str) -> Iterator[Path]:
    """A portal as `make run` starts it (SQLite, the filesystem Celery transport, a real
    `celery worker -B`, runserver on PORT) in a throwaway var folder, with the demo loaded;
    yields the folder once the portal answers, and stops everything (runs included) after."""
    var = Path(tempfile.mkdtemp(prefix=prefix))
    var.chmod(0o711)  # members' jobs run under their own uids and pass through it
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "CELERY_TASK_ALWAYS_EAGER")
    }
    env.update(DEBUG="true", PORTAL_VAR_DIR=str(var), EMAIL_URL="console://")
    py = sys.executable
    subprocess.run([py, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True)
    subprocess.run(
        [py, "manage.py", "seed_demo", "--password", "demo"],
        cwd=ROOT,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    worker = subprocess.Popen(
        [
            py,
            "-m",
            "celery",
            "-A",
            "portal",
            "worker",
            "-B",
            "--pool",
            "solo",
            "--loglevel",
            "INFO",
            "--schedule",
            str(var / "celerybeat-schedule"),
        ],
        cwd=ROOT,
        env=env,
        stdout=open(var / "worker.log", "w"),
        stderr=subprocess.STDOUT,
    )
    web = subprocess.Popen(
        [py, "manage.py", "runserver", "--noreload", f"127.0.0.1:{PORT}"],
        cwd=ROOT,
        env=env,
        stdout=open(var / "web.log", "w"),
        stderr=subprocess.STDOUT,
    )
    try:
        until(_up, 120, "the portal", interval=0.5)
        yield var
    finally:
        for proc in (web, worker):
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
        stop_cells(var)
        shutil.rmtree(var, ignore_errors=True)


def stop_cells(var: Path) -> None:
    """Kill the cells left running under var/local-jobs (detached: they outlive the portal):
    only processes whose working directory is one of those cell folders."""
    for pid_file in (var / "local-jobs").glob("*/*/*/pid.json"):
        info = json.loads(pid_file.read_text())
        for pid in (info.get("child_pid"), info.get("pid")):
            try:
                if pid and os.readlink(f"/proc/{pid}/cwd") == str(pid_file.parent):
                    os.kill(pid, 9)
            except OSError:
                continue


def _up() -> bool:
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{PORT}/", timeout=2)  # nosec B310 # literal http URL
        return True
    except OSError:
        return False


if __name__ == "__main__":
    sys.exit(main())
