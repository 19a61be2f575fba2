"""A real Celery worker process on Redis, pointed at the test database (for tests marked
`worker`, which must use committed data: `django_db(transaction=True)`)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

from django.conf import settings

ROOT = Path(__file__).resolve().parent.parent


def database_url() -> str:
    db = settings.DATABASES["default"]
    return (
        f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST'] or '127.0.0.1'}:"
        f"{db['PORT'] or 5432}/{db['NAME']}"
    )


def stop_process(proc: subprocess.Popen, timeout: float = 15) -> None:
    """Ask a child process to stop (SIGTERM), and kill it if it has not within `timeout`."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def running_worker(extra_env: dict[str, str] | None = None, queue: str | None = None):
    """Start `celery worker`, wait until it answers a ping, stop it afterwards.

    The worker listens on a queue of its own, and this process sends every task there, so
    test runs sharing one Redis (several checkouts, CI beside a developer) never take each
    other's tasks. Several workers share one `queue` when given the same one (the production
    shape: any worker may take any task)."""
    from portal.celery import app

    node_name = f"test-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    name = queue or node_name
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        "CELERY_TASK_ALWAYS_EAGER": "false",
        **(extra_env or {}),
    }
    old = (app.conf.task_always_eager, app.conf.task_default_queue)
    app.conf.task_always_eager, app.conf.task_default_queue = False, name
    (ROOT / "var").mkdir(exist_ok=True)
    log = open(ROOT / "var" / f"{node_name}.log", "w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "portal",
            "worker",
            "--pool",
            "solo",
            "--loglevel",
            "INFO",
            "-Q",
            name,
            "-n",
            f"{node_name}@%h",
            "--without-gossip",
            "--without-mingle",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    proc.log_path = Path(log.name)  # type: ignore[attr-defined]
    try:
        deadline = time.monotonic() + 90
        node = f"{node_name}@{socket.gethostname()}"
        while not app.control.ping(destination=[node], timeout=0.5):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"worker did not start; see {log.name}")
        yield proc
    finally:
        stop_process(proc, timeout=20)
        log.close()
        app.conf.task_always_eager, app.conf.task_default_queue = old
