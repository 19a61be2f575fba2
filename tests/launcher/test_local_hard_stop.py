"""The local backend's hard stop, on real processes: a cell that ignores SIGTERM at its
wall-time limit is killed (SIGKILL, its whole process group: a grandchild too) after the grace,
and is charged its limit, not the time it ran past it."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

from launcher.local import cells
from launcher.local.backend import charged_seconds
from launcher.local.supervisor import proc_start_ticks
from tests.waiting import wait_for

STUBBORN = textwrap.dedent("""
    import signal, subprocess, sys, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = subprocess.Popen([sys.executable, "-c",
                              "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(300)"])
    open("grandchild.pid", "w").write(str(child.pid))
    print("ignoring SIGTERM", flush=True)
    time.sleep(300)
""")


def test_a_cell_that_ignores_sigterm_is_killed_with_its_group_and_charged_its_limit(tmp_path: Path):
    job_dir = tmp_path / "job-token-1234"
    cells.write_job(
        job_dir,
        token="job-token-1234",
        data="",
        synth=None,
        pythonpath=str(Path(__file__).resolve().parents[2]),
        cells={
            "0": {
                "argv": [sys.executable, "-c", STUBBORN],
                "slots": 1,
                "limit_seconds": 2,
                "kill_after_seconds": 1,
            }
        },
    )
    cell = job_dir / "0"
    cells.spawn(cell)
    grandchild = int(
        wait_for(
            lambda: (cell / "grandchild.pid").exists() and (cell / "grandchild.pid").read_text(),
            timeout=30,
            what="the grandchild's pid",
        )
    )

    ended = wait_for(lambda: cells.read_json(cell / cells.EXIT), timeout=60, what="exit.json")

    assert ended["timed_out"] is True and ended["exit_code"] == 128 + 9  # SIGKILL
    assert ended["elapsed_seconds"] >= 3  # the limit, then the grace: SIGTERM was ignored
    wait_for(lambda: proc_start_ticks(grandchild) is None, timeout=10, what="the grandchild's end")
    assert charged_seconds(ended) == 2
    assert "ignoring SIGTERM" in (cell / cells.LOG).read_text()
    assert cells.read_cell(cell).phase == "ended"
