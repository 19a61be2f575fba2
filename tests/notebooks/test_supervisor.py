"""The local notebook's supervisor (launcher/notebooks/hub/supervisor.py) on real processes:
its record is what the portal charges, so each way a server ends is recorded as itself."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from launcher.notebooks.hub.local import SUPERVISOR
from tests.notebooks.hubfixture import WAIT
from tests.waiting import wait_for


def supervise(tmp_path, hours: float, *command: str) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            str(SUPERVISOR),
            "--record",
            str(tmp_path / "record.json"),
            "--hours",
            str(hours),
            "--grace",
            "5",
            "--log",
            str(tmp_path / "server.log"),
            "--",
            *command,
        ]
    )


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
    started = wait_for(
        lambda: record(tmp_path).get("server_pid") and record(tmp_path),
        timeout=WAIT,
        every=0.2,
        what="the record's start",
    )
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


def test_a_setsid_escape_and_a_double_fork_die_with_the_session(tmp_path):
    # The "server" starts a process in its own session and a double-forked one, then waits:
    # both are reparented to the supervisor (their subreaper), and Stop ends them.
    escape = (
        "import os, subprocess, time\n"
        "a = subprocess.Popen(['setsid', 'sleep', '300']).pid\n"
        "b = subprocess.Popen(['sh', '-c', 'sleep 300 >/dev/null & echo $!'], stdout=subprocess.PIPE)"
        ".communicate()[0].decode().strip()\n"
        "print(a, b, flush=True)\n"
        "time.sleep(300)\n"
    )
    process = supervise(tmp_path, 1, sys.executable, "-c", escape)
    log = tmp_path / "server.log"
    pids = wait_for(
        lambda: log.exists() and log.read_text().split(), timeout=WAIT, every=0.2, what="the pids"
    )
    assert all(Path(f"/proc/{pid}").exists() for pid in pids)
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=60) == 0
    assert [pid for pid in pids if Path(f"/proc/{pid}").exists()] == []


def test_the_server_runs_as_the_member_under_the_facilitys_limits(member_tmp, settings):
    from launcher.local import identity

    settings.LOCAL_HOMES_DIR = member_tmp / "homes"
    entry = identity.ensure_account(987654)  # a portal user id no test uses
    run_as = entry.as_dict()
    probe = (
        "import os, resource\n"
        "print(os.getuid(), os.getgid(), resource.getrlimit(resource.RLIMIT_AS)[0])\n"
        "b = bytearray(600 * 2**20)\n"
    )  # over the 512 MiB cap: MemoryError, exit 1
    process = subprocess.Popen(
        [
            sys.executable,
            str(SUPERVISOR),
            "--record",
            str(member_tmp / "record.json"),
            "--hours",
            "1",
            "--log",
            str(member_tmp / "server.log"),
            "--run-as",
            json.dumps(run_as),
            "--limits",
            json.dumps({"memory_bytes": 2**29}),
            "--",
            sys.executable,
            "-c",
            probe,
        ]
    )
    assert process.wait(timeout=60) == 1
    uid, gid, cap = (member_tmp / "server.log").read_text().split()[:3]
    assert (int(uid), int(gid), int(cap)) == (entry.uid, entry.gid, 2**29)
    assert "MemoryError" in (member_tmp / "server.log").read_text()
    assert json.loads((member_tmp / "record.json").read_text())["exit"] == 1
