"""The seam's errors and the checks that raise them: `BackendError(message, permanent=...)`,
`PathRefused`, and the name and path checks every backend applies to what reaches a scheduler
or a storage. Plain Python, no Django, so the hub's Slurm spawner (launcher/notebooks/hub/)
and the Slurm client use them; everything else imports them from contract.py, the seam's one
module, which re-exports them beside the Protocol and the facts."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from allocations.usernames import CLUSTER_USERNAME_HELP, is_cluster_username


class BackendError(Exception):
    """A backend operation failed.

    `permanent` is True when retrying cannot help (bad host key, refused by policy, invalid
    input) and False when the same call may succeed later unchanged (network down, timeout,
    daemon restarting). The client that raises it decides, once; callers never re-classify.
    """

    def __init__(self, message: str, *, permanent: bool) -> None:
        super().__init__(message)
        self.message = message
        self.permanent = permanent

    def __str__(self) -> str:
        kind = "permanent" if self.permanent else "transient"
        return f"{self.message} ({kind})"


class PathRefused(BackendError):
    """A data path that is missing or resolves outside the folder it must stay in (permanent:
    the launch is refused with the reason)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, permanent=True)


# -- name checks ------------------------------------------------------------------------------

# Names that reach a scheduler's own parser (sacctmgr reads `name=a,b` as two accounts, and a
# leading '-' as an option), so they are restricted beyond what shell quoting protects against.
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")
TOKEN_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{7,63}$")
NO_STORAGE = "has no project storage configured (storage_root in its backend settings)"


def check_name(value: str, what: str) -> str:
    """Return `value` if it is a safe scheduler name, else raise a permanent BackendError."""
    if not isinstance(value, str) or not NAME_RE.match(value):
        raise BackendError(
            f"invalid {what} {value!r}: use 1-64 of a-z 0-9 _ . - starting with a letter or digit",
            permanent=True,
        )
    return value


def check_cluster_username(value: str) -> str:
    """Return `value` if it is a member login the scheduler may get (allocations/usernames.py,
    the one rule), else raise a permanent BackendError."""
    if not is_cluster_username(value):
        raise BackendError(
            f"invalid cluster username {value!r}: {CLUSTER_USERNAME_HELP}", permanent=True
        )
    return value


def project_folder(
    backend_settings: Mapping[str, Any] | None, project_code: str, *, default_root: str = ""
) -> str:
    """`<storage_root>/<project code>`: a project's folder in a facility's project storage
    (`storage_root` in its backend settings, else `default_root`). Raises PathRefused when
    there is neither."""
    root = str((backend_settings or {}).get("storage_root") or default_root)
    if not root:
        raise PathRefused(NO_STORAGE)
    return f"{root.rstrip('/')}/{project_code}"


def confined(real_root: str, real: str) -> bool:
    """Whether the resolved path `real` is the resolved folder `real_root` or lies below it."""
    return real == real_root or real.startswith(real_root.rstrip("/") + "/")
