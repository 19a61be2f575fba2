"""Build the backend object for a Facility from its `backend_settings`.

Slurm settings (all but host/user/key_path/host_key have defaults):
  host, port (22), user, key_path, host_key (a known_hosts line, bare key or file path;
  `host_key_path` is accepted as an alias), cluster, partition, jobs_dir ("portal-jobs"),
  python ("python3": the interpreter on the compute side), python_path (extra PYTHONPATH on
  the compute side, e.g. a shared virtualenv's site-packages), connect_timeout, retries,
  storage_root (the project storage root for datasets; launcher/datasets.py); for notebook
  sessions (docs/notebooks-slurm.md): notebook_python (default: python), notebook_env (extra
  environment), notebook_readonly_datasets (default true: read-only bind mounts).

Connections are cached per process and facility (one SSH connection reused by every task of a
worker) and rebuilt when the settings change.
"""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from allocations.models import Facility
from launcher.backends.base import BackendError
from .client import SlurmClient
from .ssh import SSHConnection, SSHTarget

_cache: dict[int, tuple[str, SlurmClient]] = {}
_lock = threading.Lock()


def slurm_settings(facility: Facility) -> dict[str, Any]:
    """The facility's Slurm settings with defaults; a permanent BackendError names what is missing."""
    raw = dict(facility.backend_settings or {})
    if "host_key" not in raw and "host_key_path" in raw:
        raw["host_key"] = raw["host_key_path"]
    missing = [k for k in ("host", "user", "key_path", "host_key", "cluster") if not raw.get(k)]
    if missing:
        raise BackendError(f"facility {facility.slug} has no {', '.join(missing)} in its backend "
                           "settings", permanent=True)
    raw.setdefault("port", 22)
    raw.setdefault("jobs_dir", "portal-jobs")
    raw.setdefault("python", "python3")
    raw.setdefault("python_path", "")
    return raw


def slurm_client(facility: Facility) -> SlurmClient:
    """The (cached) SlurmClient for a facility."""
    conf = slurm_settings(facility)
    key = repr(sorted(conf.items()))
    with _lock:
        cached = _cache.get(facility.pk)
        if cached and cached[0] == key:
            return cached[1]
        if cached:
            cached[1].ssh.close()
        target = SSHTarget(
            host=conf["host"], port=int(conf["port"]), user=conf["user"],
            key_path=Path(conf["key_path"]), host_key=conf["host_key"],
            connect_timeout=float(conf.get("connect_timeout", 10)),
            retries=int(conf.get("retries", 3)),
            backoff_seconds=float(conf.get("backoff_seconds", 0.5)),
        )
        backend = SlurmClient(SSHConnection(target), cluster=conf["cluster"],
                               partition=conf.get("partition") or None, jobs_dir=conf["jobs_dir"])
        _cache[facility.pk] = (key, backend)
        return backend


def forget(facility_id: int) -> None:
    """Drop a cached connection (tests that stop sshd, settings edited by an admin)."""
    with _lock:
        cached = _cache.pop(facility_id, None)
    if cached:
        cached[1].ssh.close()
