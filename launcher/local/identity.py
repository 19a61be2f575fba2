"""Whose uid a member's work runs under on the `local` backend (docs/security.md, "Users' code").

Every job, sweep cell and notebook of a member runs under the member's own unix account, with the
allocation's project group as its one supplementary group, never as the portal:

- a site names its accounts in the facility's backend settings, `"accounts": {"<portal
  username>": "<unix login>"}`; those logins must exist;
- otherwise, when the portal runs as root (`make run`), it creates a system account per portal
  user on first use (`portal-u<user id>`, no password, no login shell, home under
  settings.LOCAL_HOMES_DIR) and a system group per project (`portal-p<project id>`);
- when it cannot switch identities (not root, or settings.LOCAL_RUN_AS_MEMBERS is "no"), jobs
  (code the portal ships) run as the portal and notebooks (arbitrary code) are refused, with a
  reason on the page and a 409 in the API (`notebook_refusal`).

The project's folder is `root:<project group>`, mode 2770: its members read and write it, no
one else even lists it. Names are made from ids, never from user text, and the commands run with
argument lists.
"""

from __future__ import annotations

import grp
import os
import pwd
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

from django.conf import settings

from ..backends.contract import BackendError
from .contain import RunAs

ACCOUNT_PREFIX, GROUP_PREFIX = "portal-u", "portal-p"  # settings.LOCAL_ACCOUNT_PREFIXES


def account_name(user_id: int) -> str:
    """The unix login the portal makes for portal user `user_id` (a name from an id only)."""
    return f"{_prefixes()[0]}{int(user_id)}"


def group_name(project_id: int) -> str:
    """The unix group the portal makes for project `project_id`."""
    return f"{_prefixes()[1]}{int(project_id)}"


def _prefixes() -> tuple[str, str]:
    """(account, group) name prefixes: settings.LOCAL_ACCOUNT_PREFIXES, so that two portals
    on one machine (a test run beside `make run`) never share accounts."""
    account, group = getattr(settings, "LOCAL_ACCOUNT_PREFIXES", (ACCOUNT_PREFIX, GROUP_PREFIX))
    return str(account), str(group)


NOLOGIN = "/usr/sbin/nologin"


def can_switch() -> bool:
    """Whether this process can start work under other uids: root, and not switched off."""
    wanted = str(getattr(settings, "LOCAL_RUN_AS_MEMBERS", "auto")).lower()
    return wanted not in ("no", "false", "0", "off") and os.geteuid() == 0


def refusal() -> str:
    """Why notebooks (arbitrary code) cannot run on a local facility here ("" when they can)."""
    if can_switch():
        return ""
    return (
        "This portal runs without the rights to start processes as its members (it is not "
        "root, or PORTAL_LOCAL_RUN_AS_MEMBERS is off), so a notebook would run as the portal "
        "itself and could read its database and secrets: notebooks are refused on this "
        "facility until an operator runs the portal as root or names member accounts "
        "(docs/security.md)."
    )


def homes_dir() -> Path:
    return Path(getattr(settings, "LOCAL_HOMES_DIR", "") or settings.VAR_DIR / "homes")


def _run(argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 9):  # 9: the name exists already (a concurrent first use)
        raise BackendError(
            f"{argv[0]} failed: {done.stderr.strip() or done.returncode}", permanent=True
        )


def ensure_group(project_id: int) -> int:
    """The project's group's gid, created (a system group) on first use."""
    name = group_name(project_id)
    try:
        return grp.getgrnam(name).gr_gid
    except KeyError:
        _run(["groupadd", "--system", name])
    return grp.getgrnam(name).gr_gid


def ensure_account(user_id: int) -> RunAs:
    """The portal user's own system account, created on first use: its own group, no
    password, no login shell, its home in homes_dir() (mode 0700). No supplementary group."""
    name = account_name(user_id)
    home = homes_dir() / name
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        _run(
            [
                "useradd",
                "--system",
                "--user-group",
                "--no-create-home",
                "--home-dir",
                str(home),
                "--shell",
                NOLOGIN,
                "--comment",
                f"portal user {int(user_id)}",
                name,
            ]
        )
        entry = pwd.getpwnam(name)
    # The home is this portal's (homes_dir), whatever the account was first made with.
    private_dir(home, uid=entry.pw_uid, gid=entry.pw_gid, mode=0o700)
    return RunAs(login=entry.pw_name, uid=entry.pw_uid, gid=entry.pw_gid, home=str(home))


def traversable_dir(path: Path) -> None:
    """A folder of the portal's that members pass through but cannot list (0711)."""
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o711)


def private_dir(path: Path, *, uid: int, gid: int, mode: int) -> None:
    """`path` created (its parents traversable) and owned by uid:gid with `mode`."""
    if not path.parent.exists():
        traversable_dir(path.parent)
    path.mkdir(exist_ok=True)
    os.chown(path, uid, gid)
    path.chmod(mode)


def run_as_for(*, facility: Any, user: Any, project_id: int) -> RunAs | None:
    """The identity `user`'s work on `facility` for project `project_id` runs under, or None
    where the portal cannot switch (the work then runs as the portal: batch jobs only)."""
    if not can_switch():
        return None
    login = ((facility.backend_settings or {}).get("accounts") or {}).get(user.get_username())
    if login:
        try:
            entry = pwd.getpwnam(str(login))
        except KeyError:
            raise BackendError(
                f"{facility.name} maps {user.get_username()} to the unix account "
                f"{login!r}, which does not exist on this machine",
                permanent=True,
            ) from None
        if entry.pw_uid == 0 or entry.pw_uid == os.geteuid():
            raise BackendError(
                f"{facility.name} maps {user.get_username()} to {login!r}, the "
                "portal's own or root's account: refused",
                permanent=True,
            )
    elif getattr(settings, "LOCAL_CREATE_ACCOUNTS", True):
        made = ensure_account(user.pk)
        check_reachable(os.path.realpath(sys.executable), settings.BASE_DIR)
        return RunAs(
            login=made.login,
            uid=made.uid,
            gid=made.gid,
            groups=(ensure_group(project_id),),
            home=made.home,
        )
    else:
        raise BackendError(
            f"{facility.name} names no unix account for {user.get_username()} "
            "(backend settings 'accounts') and the portal creates none",
            permanent=True,
        )
    check_reachable(os.path.realpath(sys.executable), settings.BASE_DIR)
    return RunAs(
        login=entry.pw_name,
        uid=entry.pw_uid,
        gid=entry.pw_gid,
        groups=(ensure_group(project_id),),
        home=entry.pw_dir,
    )


def project_dir(path: Path, *, project_id: int) -> None:
    """The project's folder as its members share it: root:<project group>, mode 2770 (new
    files take the group). Its parent (the storage root) is made traversable if the portal
    created it."""
    if not can_switch():
        path.mkdir(parents=True, exist_ok=True)
        return
    private_dir(path, uid=0, gid=ensure_group(project_id), mode=0o2770)


def closed_ancestor(path: str | Path) -> Path | None:
    """The first folder above `path` (itself included when a folder) that other users cannot
    pass through (no o+x), or None when a member's uid reaches it."""
    target = Path(path).resolve()
    for folder in [*reversed(target.parents), *([target] if target.is_dir() else [])]:
        try:
            if not folder.stat().st_mode & stat.S_IXOTH:
                return folder
        except OSError:
            return folder
    return None


def check_reachable(*paths: str | Path) -> None:
    """BackendError (permanent) naming the folder that keeps members' processes from the
    portal's Python or code (a checkout or a pyenv under /root, mode 0700)."""
    for path in paths:
        closed = closed_ancestor(path)
        if closed is not None:
            raise BackendError(
                f"members' processes cannot reach {path}: {closed} is closed to other users. "
                f"Let them pass through it (chmod o+x {closed}, as `make install` does for "
                "the portal's own Python and checkout) or install the portal elsewhere",
                permanent=True,
            )
