"""`--follow`: poll the portal and draw a live progress bar until the work ends; the exit code
is the outcome (0 succeeded; 1 failed, cancelled or timed out)."""

from __future__ import annotations

import datetime as dt
import time

from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn

from .client import FAILED, OK, Client
from .output import duration, err, hours

POLL_SECONDS = 1.0
FINAL = ("succeeded", "failed", "cancelled", "timeout", "stopped_early")


def _started(job: dict) -> dt.datetime | None:
    value = job.get("started_at")
    return dt.datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None


def gpu_hours_so_far(job: dict, now: dt.datetime | None = None) -> float:
    """What the portal has charged, or while it has not yet, GPUs x time since the start."""
    charged = (job.get("gpu_seconds") or 0) / 3600
    started = _started(job)
    if charged or not started or job.get("is_final"):
        return charged
    now = now or dt.datetime.now(dt.UTC)
    return max(0.0, (now - started).total_seconds()) * (job.get("gpus") or 1) / 3600


def job_detail(job: dict, unit: dict) -> str:
    p = job.get("progress") or {}
    parts = []
    if p.get("epochs"):
        parts.append(f"epoch {p.get('epoch') or 0}/{p['epochs']}")
    if p.get("loss") is not None:
        parts.append(f"loss {float(p['loss']):.4f}")
    if p.get("eta_s") is not None and not job.get("is_final"):
        parts.append(f"ETA {duration(p['eta_s'])}")
    parts.append(f"{hours(gpu_hours_so_far(job))} {unit['singular']}-h")
    return "  ".join(parts)


def outcome(state: str) -> int:
    return OK if state == "succeeded" else FAILED


def follow_job(client: Client, job_id: int, unit: dict) -> dict:
    """Draw the job's progress until it is final; return the last job object."""
    columns = (
        TextColumn("job {task.fields[id]} [bold]{task.fields[state]:<10}[/]"),
        BarColumn(),
        TaskProgressColumn(),
        TextColumn("{task.fields[detail]}"),
    )
    with Progress(*columns, console=err, transient=False) as progress:
        task = progress.add_task("job", total=100, id=job_id, state="…", detail="")
        state = None
        while True:
            job = client.get(f"jobs/{job_id}/")
            if job["state"] != state:
                reason = f": {job['state_reason']}" if job.get("state_reason") else ""
                progress.console.print(f"job {job_id}: {job['state']}{reason}")
                state = job["state"]
            progress.update(
                task,
                completed=float(job.get("percent") or 0),
                state=job["state"],
                detail=job_detail(job, unit),
            )
            if job.get("is_final"):
                return job
            time.sleep(POLL_SECONDS)


def follow_sweep(client: Client, sweep_id: int) -> dict:
    """Draw cells finished out of the sweep's size until every cell is final."""
    columns = (
        TextColumn("sweep {task.fields[id]}"),
        BarColumn(),
        TextColumn("{task.fields[cells]} cells"),
        TextColumn("{task.fields[detail]}"),
    )
    with Progress(*columns, console=err, transient=False) as progress:
        task = progress.add_task("sweep", total=None, id=sweep_id, cells="…", detail="")
        while True:
            sweep = client.get(f"sweeps/{sweep_id}/")
            counts = sweep.get("counts") or {}
            done = sum(counts.get(s, 0) for s in FINAL)
            detail = "  ".join(f"{s} {n}" for s, n in counts.items() if n)
            progress.update(
                task,
                total=sweep["size"],
                completed=done,
                detail=detail,
                cells=f"{done}/{sweep['size']}",
            )
            # A staged sweep (early stopping, a search) may end below its size: the API says.
            if sweep.get("finished", done >= sweep["size"]):
                return sweep
            time.sleep(POLL_SECONDS)


def sweep_outcome(sweep: dict) -> int:
    """OK when every cell succeeded or was stopped early by the sweep's own schedule."""
    counts = sweep.get("counts") or {}
    cells = sum(counts.values())
    good = counts.get("succeeded", 0) + counts.get("stopped_early", 0)
    return OK if cells and good == cells and counts.get("succeeded", 0) else FAILED


def new_text(seen: str, tail: str) -> str:
    """What `tail` (the log's last part now) adds to `seen` (the last part printed before):
    the tail's end after the longest overlap, so a moving window prints each line once."""
    if tail.startswith(seen):
        return tail[len(seen) :]
    for k in range(min(len(seen), len(tail)), 0, -1):
        if seen.endswith(tail[:k]):
            return tail[k:]
    return tail


def follow_log(client: Client, job_id: int, write) -> dict:
    seen = ""
    while True:
        data = client.get(f"jobs/{job_id}/log/")
        tail = data.get("log") or ""
        added = new_text(seen, tail)
        if added:
            write(added)
        seen = tail
        if data["state"] in FINAL:
            return data
        time.sleep(POLL_SECONDS)
