"""What the local supervisors use to run a member's code as the member and to end all of it
(standard library only, no Django: the job supervisor and the hub's notebook supervisor import
it as a plain module).

- `RunAs`: the member's unix identity (uid, gid, the project's group), handed to
  `subprocess.Popen` as `user`, `group`, `extra_groups` (the supervisor runs as the portal, root
  under `make run`, and the child drops to the member before exec).
- `member_env`: the child's whole environment, built from nothing: PATH, locale, HOME, USER and
  what the caller adds. Nothing of the portal's (DATABASE_URL, SECRET_KEY, tokens) is passed on.
- `become_subreaper` + `kill_tree`: the supervisor becomes its descendants' reaper
  (PR_SET_CHILD_SUBREAPER), so a process that double-forks or calls setsid to escape is
  reparented to the supervisor, not to init; at the end `kill_tree` SIGKILLs every descendant
  until none is left. That is the containment where no cgroup can be written (docs/security.md).
- `limits`: CPU seconds, address space and open files a facility may cap (setrlimit, applied to
  the supervisor before it starts the child, and so inherited by everything the child starts).
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import time
from dataclasses import asdict, dataclass
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36
SAFE_PATH = "/usr/local/bin:/usr/bin:/bin"
# The environment a member's process may inherit from the supervisor; everything else is dropped.
KEEP = ("LANG", "LC_ALL", "LC_CTYPE", "TZ", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


@dataclass(frozen=True)
class RunAs:
    """A member's unix identity on this machine: `login` (for messages and USER), `uid`, `gid`
    (their own group), `groups` (supplementary: the allocation's project group), `home`."""

    login: str
    uid: int
    gid: int
    groups: tuple[int, ...] = ()
    home: str = ""

    def as_dict(self) -> dict:
        return {**asdict(self), "groups": list(self.groups)}

    @classmethod
    def from_dict(cls, data: dict | None) -> RunAs | None:
        if not data:
            return None
        return cls(
            login=str(data["login"]),
            uid=int(data["uid"]),
            gid=int(data["gid"]),
            groups=tuple(int(g) for g in data.get("groups") or ()),
            home=str(data.get("home") or ""),
        )

    def popen_kwargs(self) -> dict:
        """`subprocess.Popen` arguments that start the child as this identity."""
        return {"user": self.uid, "group": self.gid, "extra_groups": list(self.groups)}


def member_env(run_as: RunAs | None, *, path_prefix: str = "", **extra: str) -> dict[str, str]:
    """The child's environment: a fixed PATH (after `path_prefix`, the portal's Python's bin),
    the locale, and USER/LOGNAME/HOME of `run_as` (the supervisor's own HOME and USER are not
    passed on), plus `extra`. Never the supervisor's environment as a whole."""
    env = {key: os.environ[key] for key in KEEP if key in os.environ}
    env["PATH"] = f"{path_prefix}:{SAFE_PATH}" if path_prefix else SAFE_PATH
    if run_as is not None:
        env.update(USER=run_as.login, LOGNAME=run_as.login, HOME=run_as.home or "/nonexistent")
    env.update(extra)
    return env


def apply_limits(limits: dict | None) -> None:
    """setrlimit for this process (and so for every child): `cpu_seconds` (RLIMIT_CPU, per
    process), `memory_bytes` (RLIMIT_AS), `open_files` (RLIMIT_NOFILE). Absent: unchanged."""
    for key, which in (
        ("cpu_seconds", resource.RLIMIT_CPU),
        ("memory_bytes", resource.RLIMIT_AS),
        ("open_files", resource.RLIMIT_NOFILE),
    ):
        value = (limits or {}).get(key)
        if value:
            resource.setrlimit(which, (int(value), int(value)))


def become_subreaper() -> bool:
    """Make orphaned descendants of this process its children (Linux); False where it cannot."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _parents() -> dict[int, int]:
    """pid -> parent pid of every live process (/proc)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] not in ("Z", "X"):
            found[int(entry.name)] = int(fields[1])
    return found


def descendants(pid: int) -> list[int]:
    """Every live process below `pid` in the process tree."""
    parents = _parents()
    children: dict[int, list[int]] = {}
    for child, parent in parents.items():
        children.setdefault(parent, []).append(child)
    found, todo = [], list(children.get(pid, ()))
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, ()))
    return found


def reap() -> None:
    """Collect every child that has ended (a subreaper inherits orphans' exits)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def kill_tree(pid: int | None = None, *, timeout: float = 5.0) -> int:
    """SIGKILL every descendant of `pid` (this process by default) until none is left or
    `timeout` passes; returns how many were killed. With `become_subreaper` first, this
    includes everything a child started with setsid or a double fork."""
    root = os.getpid() if pid is None else pid
    killed = 0
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = descendants(root)
        if not found:
            break
        for victim in found:
            try:
                os.kill(victim, signal.SIGKILL)
                killed += 1
            except (ProcessLookupError, PermissionError):
                continue
        time.sleep(0.05)
        reap()
    reap()
    return killed
