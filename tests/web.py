"""A real web process: gunicorn serving the portal, pointed at the test database and sending its
tasks to a test's queue (for tests that use committed data: `django_db(transaction=True)`)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import requests
from django.conf import settings

from tests.worker import ROOT, database_url, stop_process


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def running_web(*, queue: str, workers: int = 1) -> Iterator[str]:
    """Start `gunicorn portal.wsgi` as production does (DEBUG off, the Redis broker), wait until
    /healthz answers, yield its base URL, stop it afterwards. Its tasks go to `queue`, where a
    test's `running_worker(queue=...)` reads them."""
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        "CELERY_TASK_ALWAYS_EAGER": "false",
        "CELERY_TASK_DEFAULT_QUEUE": queue,
        "DEBUG": "false",
        "ALLOWED_HOSTS": "127.0.0.1",
    }
    (ROOT / "var").mkdir(exist_ok=True)
    log = open(ROOT / "var" / f"web-{os.getpid()}-{uuid.uuid4().hex[:8]}.log", "w")
    proc = subprocess.Popen(
        [
            str(Path(sys.executable).with_name("gunicorn")),
            "portal.wsgi:application",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(workers),
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"gunicorn did not start; see {log.name}")
            # Not listening yet, or its first request still loading the app (slow on a busy
            # machine): ask again.
            with contextlib.suppress(requests.ConnectionError, requests.Timeout):
                if requests.get(f"{url}/healthz", timeout=10).status_code == 200:
                    break
            time.sleep(0.2)
        yield url
    finally:
        stop_process(proc)
        log.close()
