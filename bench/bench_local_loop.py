"""The `make run` loop, timed: launch -> running -> succeeded for the launch form's default job,
on the `local` facility (local processes) and, in the same run, on `local-slurm` (Slurm over
SSH, when `make services` is up).

Everything is the embedded default of `make run` (SQLite, the filesystem Celery transport, a real
`celery worker -B`, runserver), in a throwaway var folder, on port 8101 (or BENCH_PORT). The
clock runs from the POST /api/v1/jobs/ reply to the first GET that shows `running`, and to the
first that shows a final state; the API is polled every 0.5 s, so each time is late by < 0.5 s,
and the beat polls the backends every 10 s, which dominates launch -> running.

Run: python bench/bench_local_loop.py [--slurm/--no-slurm] [--keep]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PORT = int(os.environ.get("BENCH_PORT", "8101"))
BASE = f"http://127.0.0.1:{PORT}/api/v1"
# The launch form's defaults (launcher/forms.py LaunchForm initial values).
DEFAULT_JOB = {
    "gpus": 1,
    "wall_time_minutes": 60,
    "params": {"model": "densenet121", "dataset": "synthetic-ct", "epochs": 10},
}


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


def embedded_env(var: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "CELERY_TASK_ALWAYS_EAGER")
    }
    env.update(DEBUG="true", PORTAL_VAR_DIR=str(var), EMAIL_URL="console://")
    return env


def wait_up() -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{PORT}/", timeout=2)  # nosec B310 # literal http URL
            return
        except OSError:
            time.sleep(0.5)
    raise SystemExit("the portal did not come up")


def allocation_on(token: str, facility: str) -> int:
    """A trial on `facility` for the researcher's first project (auto-approved), active."""
    project = call("GET", "/projects/", token)["results"][0]["id"]
    today = dt.date.today()
    made = call(
        "POST",
        "/requests/",
        token,
        {
            "project": project,
            "facility": facility,
            "kind": "trial",
            "gpu_hours": 50,
            "start_date": today.isoformat(),
            "end_date": (today + dt.timedelta(days=30)).isoformat(),
            "data_sensitivity": "public",
            "justification": "Timing the make-run loop.",
            "submit": True,
        },
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for alloc in call("GET", "/allocations/", token)["results"]:
            if alloc["facility"] == facility and alloc["status"] == "active":
                return alloc["id"]
        time.sleep(1)
    raise SystemExit(f"no active allocation on {facility}: {made}")


def time_job(token: str, allocation: int) -> dict:
    t0 = time.monotonic()
    job = call("POST", "/jobs/", token, {"allocation": allocation, **DEFAULT_JOB})
    running = None
    while True:
        state = call("GET", f"/jobs/{job['id']}/", token)
        now = time.monotonic() - t0
        if running is None and state["state"] in ("running", "succeeded", "failed"):
            running = now
        if state["state"] in ("succeeded", "failed", "cancelled", "timeout"):
            final = now
            while not state.get("gpu_seconds") and time.monotonic() - t0 < final + 120:
                time.sleep(0.5)  # the beat's ingest_usage charges it
                state = call("GET", f"/jobs/{job['id']}/", token)
            return {
                "to_charged_s": round(time.monotonic() - t0, 1),
                "job": job["id"],
                "state": state["state"],
                "to_running_s": round(running, 1),
                "to_final_s": round(final, 1),
                "gpu_seconds": state.get("gpu_seconds"),
                "accuracy": ((state.get("metrics") or {}).get("patient") or {})
                .get("accuracy", {})
                .get("value"),
                "reason": state.get("state_reason", ""),
            }
        if now > 3600:
            return {"job": job["id"], "state": f"gave up in {state['state']}"}
        time.sleep(0.5)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--slurm", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--keep", action="store_true", help="keep the var folder")
    args = parser.parse_args()
    var = Path(tempfile.mkdtemp(prefix="bench-local-loop-"))
    var.chmod(0o711)  # members' jobs run under their own uids and pass through it
    env = embedded_env(var)
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
        wait_up()
        token = call("POST", "/auth/token/", body={"username": "researcher", "password": "demo"})[
            "token"
        ]
        facilities = ["local"] + (["local-slurm"] if args.slurm else [])
        rows = []
        for slug in facilities:
            rows.append({"facility": slug, **time_job(token, allocation_on(token, slug))})
        print(
            f"make-run loop, default job {json.dumps(DEFAULT_JOB['params'])}, "
            f"{os.cpu_count()} CPU cores, beat every 10 s"
        )
        print(
            f"{'facility':<12} {'state':<10} {'launch->running s':>18} {'launch->final s':>16}"
            f" {'->charged s':>11} {'GPU-s charged':>14} {'accuracy':>9}"
        )
        for r in rows:
            print(
                f"{r['facility']:<12} {r['state']:<10} {r.get('to_running_s', '-'):>18} "
                f"{r.get('to_final_s', '-'):>16} {r.get('to_charged_s', '-'):>11} "
                f"{str(r.get('gpu_seconds')):>14} "
                f"{str(r.get('accuracy')):>9}  {r.get('reason', '')}"
            )
        return 0 if all(r["state"] == "succeeded" for r in rows) else 1
    finally:
        for proc in (web, worker):
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
        if not args.keep:
            shutil.rmtree(var, ignore_errors=True)
        else:
            print(f"kept {var}")


if __name__ == "__main__":
    sys.exit(main())
