"""The local notebook's supervisor: runs the single-user server as its child, writes the session's
record (the basis of the charge) and stops the server at its wall limit.

    python supervisor.py --record RUN_DIR/record.json --hours H [--grace S] [--log F] -- CMD...

The record is {"pid", "server_pid", "started", "ended", "exit", "reason"}, `started`/`ended` in
epoch seconds, rewritten atomically at start and at the end; `reason` is "stopped" (SIGTERM or
SIGINT to the supervisor: the hub stopped it), "time limit" (it ran `hours`) or "exited" (the
server ended by itself). Standard library only: it runs as a script, outside any package.

With `--run-as '{"login", "uid", "gid", "groups", "home"}'` the server runs as that member (the
supervisor keeps the hub's identity, so the member cannot write the record); `--limits` caps
CPU seconds, memory and open files (setrlimit). The supervisor is the subreaper of everything
the server starts: at the end (stop, time limit, exit) every such process is killed, those
started with setsid or a double fork included (launcher/local/contain.py)."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # launcher.local.contain
from launcher.local import contain  # noqa: E402  (after the path)


def write_record(path: Path, record: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(record))
    tmp.replace(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record", type=Path, required=True)
    parser.add_argument("--hours", type=float, required=True)
    parser.add_argument(
        "--grace",
        type=float,
        default=10.0,
        help="seconds between SIGTERM and SIGKILL when stopping the server",
    )
    parser.add_argument("--log", type=Path)
    parser.add_argument(
        "--run-as",
        type=json.loads,
        default=None,
        help="the member's identity as JSON (login, uid, gid, groups, home)",
    )
    parser.add_argument(
        "--limits",
        type=json.loads,
        default=None,
        help="cpu_seconds, memory_bytes, open_files as JSON",
    )
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command or args.hours <= 0:
        parser.error("a command and hours > 0 are required")

    stop_reason: list[str] = []
    signal.signal(signal.SIGTERM, lambda *_: stop_reason.append("stopped"))
    signal.signal(signal.SIGINT, lambda *_: stop_reason.append("stopped"))

    contain.become_subreaper()
    contain.apply_limits(args.limits)
    run_as = contain.RunAs.from_dict(args.run_as)
    member = run_as.popen_kwargs() if run_as else {}
    out = open(args.log, "ab") if args.log else None  # noqa: SIM115 (the child's lifetime)
    started = time.time()
    child = subprocess.Popen(
        command,
        stdout=out,
        stderr=subprocess.STDOUT if out else None,
        umask=0o007 if run_as else -1,
        **member,
    )
    record: dict[str, float | str | None] = {
        "pid": os.getpid(),
        "server_pid": child.pid,
        "started": started,
        "ended": None,
        "exit": None,
        "reason": None,
    }
    write_record(args.record, record)

    deadline = started + args.hours * 3600
    while child.poll() is None and not stop_reason and time.time() < deadline:
        try:
            child.wait(timeout=max(0.05, min(1.0, deadline - time.time())))
        except subprocess.TimeoutExpired:
            pass
    if child.poll() is None:
        reason = stop_reason[0] if stop_reason else "time limit"
        child.terminate()
        try:
            child.wait(timeout=args.grace)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
    else:
        reason = stop_reason[0] if stop_reason else "exited"
    ended = time.time()
    contain.kill_tree()  # everything the session started, setsid and double forks included
    record.update(ended=ended, exit=child.returncode, reason=reason)
    write_record(args.record, record)
    return 0 if reason != "exited" else (child.returncode or 0)


if __name__ == "__main__":
    sys.exit(main())
