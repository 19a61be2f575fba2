"""The `portal` command line against a live portal: pytest-django's `live_server` on the test
database, a local-backend facility whose jobs are real processes, and a monitor thread doing
what the beat task does (`jobs_poll`) while the command line waits.

The command line runs as a real subprocess: the `portal` console script `make install` puts in
the virtualenv, with a config dir of the test's own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.db import connection

from launcher import services
from tests.launcher.local_fixtures import jobs_dir, local_allocation, local_facility  # noqa: F401

PORTAL = Path(sys.executable).parent / "portal"


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self):
        return json.loads(self.out)


@pytest.fixture
def cli(live_server, tmp_path):
    """Run `portal ARGS` as a subprocess; `cli.env` is the environment it gets."""
    assert PORTAL.exists(), f"{PORTAL} is missing: run `make install` (pip install -e ./cli)"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PORTAL_")}
    env.update(
        XDG_CONFIG_HOME=str(tmp_path / "config"), HOME=str(tmp_path), COLUMNS="160", NO_COLOR="1"
    )

    def run(*args: str, timeout: float = 600, **extra: str) -> Result:
        proc = subprocess.run(
            [str(PORTAL), *args],
            env={**env, **extra},
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        return Result(proc.returncode, proc.stdout, proc.stderr)

    run.env = env
    run.url = live_server.url
    run.config = tmp_path / "config" / "portal" / "config.json"
    return run


@pytest.fixture
def monitor(local_facility):  # noqa: F811
    """Poll the local facility's jobs every half second (the beat task's job) until the test
    ends."""
    stop = threading.Event()

    def loop():
        try:
            while not stop.wait(0.5):
                services.jobs_poll(facility_id=local_facility.pk)
        finally:
            connection.close()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    yield
    stop.set()
    thread.join(timeout=30)
