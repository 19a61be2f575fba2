"""The production shape for bench_throughput.py: gunicorn (the version requirements.txt pins)
serving `portal.wsgi:application` with W sync workers, and `celery -A portal worker` with W
prefork processes, both on the bench's own database and Redis DB (the environment given), their
output in var/bench-throughput-*.log.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "var"


def pinned(package: str) -> str:
    """The version requirements.txt pins for `package`, checked against the one installed."""
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        name, sep, pin = line.partition("==")
        if sep and name.strip().lower() == package:
            if version(package) != pin.strip():
                raise RuntimeError(f"{package} {version(package)} installed, {pin} pinned")
            return pin.strip()
    raise RuntimeError(f"requirements.txt pins no {package}")


def flush_redis(url: str) -> None:
    """Empty the bench's own Redis DB (queue, cache): never the DB others use."""
    import redis

    if url.rstrip("/").endswith(("/0", ":6379")):
        raise RuntimeError(f"refusing to flush {url}: the bench needs a Redis DB of its own")
    client = redis.Redis.from_url(url)
    try:
        client.flushdb()
    finally:
        client.close()


def reset_logs() -> None:
    """Empty the gunicorn and worker logs of an earlier run (each W appends to them)."""
    LOGS.mkdir(exist_ok=True)
    for name in ("gunicorn", "worker"):
        (LOGS / f"bench-throughput-{name}.log").write_text("")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _stop(proc: subprocess.Popen, *, grace: float = 60) -> None:
    """SIGTERM (gunicorn and Celery finish what they are doing), then SIGKILL the group."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # stray pool children, if any
    proc.wait(timeout=30)


@contextlib.contextmanager
def gunicorn(workers: int, env: dict[str, str]) -> Iterator[str]:
    """gunicorn with `workers` sync workers on a free port; yields its base URL."""
    port = _free_port()
    log = open(LOGS / "bench-throughput-gunicorn.log", "a")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "portal.wsgi:application",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(workers),
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError("gunicorn exited; see var/bench-throughput-gunicorn.log")
            try:
                if requests.get(f"{base}/healthz", timeout=5).ok:
                    break
            except requests.RequestException:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("gunicorn did not answer /healthz in 60 s")
            time.sleep(0.2)
        yield base
    finally:
        _stop(proc, grace=30)
        log.close()


class Worker:
    """`celery -A portal worker --concurrency W` (prefork), answering pings before use."""

    def __init__(self, concurrency: int, env: dict[str, str]) -> None:
        self.name = f"bench-throughput-{uuid.uuid4().hex[:8]}@{socket.gethostname()}"
        self.log = open(LOGS / "bench-throughput-worker.log", "a")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "portal",
                "worker",
                "--pool",
                "prefork",
                "--concurrency",
                str(concurrency),
                "-n",
                self.name,
                "--without-gossip",
                "--without-mingle",
                "--loglevel",
                "WARNING",
            ],
            cwd=ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_ready(self, timeout: float = 90) -> None:
        from portal.celery import app

        deadline = time.monotonic() + timeout
        while not app.control.ping(destination=[self.name], timeout=0.5):
            if self.proc.poll() is not None:
                raise RuntimeError("the Celery worker exited; see var/bench-throughput-worker.log")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the Celery worker did not answer a ping in {timeout:.0f} s")

    def stop(self) -> None:
        """Warm shutdown: submissions under way finish and are recorded; idempotent."""
        _stop(self.proc)
        self.log.close()


@contextlib.contextmanager
def celery_worker(concurrency: int, env: dict[str, str]) -> Iterator[Worker]:
    worker = Worker(concurrency, env)
    try:
        worker.wait_ready()
        yield worker
    finally:
        worker.stop()
