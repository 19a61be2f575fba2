"""The local notebook's supervisor (launcher/notebooks/hub/supervisor.py) on real processes:
its record is what the portal charges, so each way a server ends is recorded as itself."""
from __future__ import annotations

import json
import signal
import subprocess
import sys

from launcher.notebooks.hub.local import SUPERVISOR
from tests.notebooks.hubfixture import wait_for


def supervise(tmp_path, hours: float, *command: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(SUPERVISOR), "--record",
                             str(tmp_path / "record.json"), "--hours", str(hours),
                             "--grace", "5", "--log", str(tmp_path / "server.log"), "--",
                             *command])


def record(tmp_path) -> dict:
    path = tmp_path / "record.json"
    return json.loads(path.read_text()) if path.exists() else {}


def test_the_hard_stop_ends_the_server_at_its_hours(tmp_path):
    process = supervise(tmp_path, 0.0003, "sleep", "300")  # 1.08 s
    assert process.wait(timeout=60) == 0
    done = record(tmp_path)
    assert done["reason"] == "time limit"
    assert done["exit"] == -signal.SIGTERM
    assert done["ended"] - done["started"] >= 0.0003 * 3600
    assert done["pid"] == process.pid


def test_a_stopped_server_is_recorded_as_stopped_with_its_span(tmp_path):
    process = supervise(tmp_path, 1, "sleep", "300")
    started = wait_for(lambda: record(tmp_path).get("server_pid") and record(tmp_path),
                       what="the record's start")
    assert started["ended"] is None and started["reason"] is None
    process.send_signal(signal.SIGINT)  # what the hub's LocalProcessSpawner.stop sends first
    assert process.wait(timeout=60) == 0
    done = record(tmp_path)
    assert (done["reason"], done["started"]) == ("stopped", started["started"])
    assert done["ended"] > done["started"]


def test_a_server_that_ends_by_itself_is_recorded_with_its_exit_code(tmp_path):
    process = supervise(tmp_path, 1, sys.executable, "-c", "print('bye'); raise SystemExit(3)")
    assert process.wait(timeout=60) == 3
    done = record(tmp_path)
    assert (done["reason"], done["exit"]) == ("exited", 3)
    assert (tmp_path / "server.log").read_text() == "bye\n"
