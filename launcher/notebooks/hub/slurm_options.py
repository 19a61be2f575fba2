"""What a Slurm notebook session is asked to be (the portal's user_options, checked and parsed
into `SessionOptions`), the bash that sets its job's environment, and the one SlurmClient per
cluster the hub's spawners share. No Django: the hub imports this module through
launcher/notebooks/hub/slurm.py, whose docstring says what the portal sends."""

from __future__ import annotations

import math
import re
import shlex
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from launcher.backends.errors import BackendError, check_name
from launcher.slurm.client import SlurmClient
from launcher.slurm.ssh import SSHConnection, SSHTarget

ENV_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
DATASET_RE = re.compile(r"^[A-Za-z][A-Za-z0-9._-]{0,79}$")  # allocations Dataset.name
# A folder on the cluster (absolute, or relative to the service account's home); no '..'.
PATH_RE = re.compile(r"^/?[A-Za-z0-9_][A-Za-z0-9_./-]{0,399}$")
MAX_GPUS = 64
MAX_HOURS = 24 * 14


class SessionError(ValueError):
    """user_options the spawner refuses (the portal sent something it never sends)."""


@dataclass(frozen=True)
class SessionOptions:
    """The validated user_options of one session."""

    session: int
    gpus: int
    minutes: int
    target: SSHTarget
    cluster: str
    account: str
    partition: str | None
    login: str
    workdir: str
    run_dir: str
    python: str
    jobs_dir: str = "portal-jobs"
    make_workdir: bool = False  # a workdir beside the jobs, which the service account makes
    datasets: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    readonly: bool = True  # datasets bind-mounted read-only (unprivileged namespaces)


def _path(value: Any, what: str) -> str:
    if not isinstance(value, str) or not PATH_RE.match(value) or ".." in value.split("/"):
        raise SessionError(f"invalid {what} {value!r}")
    return value.rstrip("/") or "/"


def _int(value: Any, what: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise SessionError(f"invalid {what} {value!r}")
    return value


def session_options(options: dict[str, Any]) -> SessionOptions:
    """Validate the portal's user_options; SessionError names the first bad field."""
    backend = options.get("backend_options") or {}
    ssh = backend.get("ssh") or {}
    hours = options.get("hours")
    if isinstance(hours, bool) or not isinstance(hours, (int, float)) or not 0 < hours <= MAX_HOURS:
        raise SessionError(f"invalid hours {hours!r}")
    datasets = backend.get("datasets", options.get("datasets")) or {}
    if not isinstance(datasets, dict):
        raise SessionError("datasets must be an object")
    env = backend.get("env") or {}
    if not isinstance(env, dict) or not all(
        ENV_KEY_RE.match(str(k)) and isinstance(v, str) for k, v in env.items()
    ):
        raise SessionError("env must map variable names to strings")
    try:
        target = SSHTarget(
            host=str(ssh["host"]),
            port=_int(ssh.get("port", 22), "port", 1, 65535),
            user=check_name(str(ssh["user"]), "user"),
            key_path=Path(str(ssh["key_path"])),
            host_key=str(ssh["host_key"]),
            connect_timeout=float(ssh.get("connect_timeout", 10)),
            retries=int(ssh.get("retries", 2)),
        )
        cluster = check_name(str(backend["cluster"]), "cluster")
        account = check_name(str(backend["account"]), "account")
        partition = (
            check_name(str(backend["partition"]), "partition") if backend.get("partition") else None
        )
        if not backend.get("login"):
            raise SessionError(
                "backend_options has no login: a session runs as its member's "
                "cluster login, never as the service account"
            )
        login = check_name(str(backend["login"]), "login")
        if login == target.user:
            raise SessionError(
                f"login {login!r} is the service account: a session runs as its "
                "member's own cluster login"
            )
    except KeyError as missing:
        raise SessionError(f"backend_options has no {missing}") from None
    except BackendError as error:
        raise SessionError(error.message) from None
    return SessionOptions(
        session=_int(options.get("session"), "session", 1, 2**62),
        gpus=_int(options.get("gpus"), "gpus", 0, MAX_GPUS),
        minutes=max(1, math.ceil(hours * 60 - 1e-9)),
        target=target,
        cluster=cluster,
        account=account,
        partition=partition,
        login=login,
        workdir=_path(backend.get("workdir", options.get("workdir")), "workdir"),
        run_dir=_path(backend.get("run_dir"), "run_dir"),
        jobs_dir=_path(backend.get("jobs_dir") or "portal-jobs", "jobs_dir"),
        make_workdir=backend.get("make_workdir") is True,
        python=_path(backend.get("python") or "python3", "python"),
        datasets={_dataset(k): _path(v, f"dataset {k}") for k, v in datasets.items()},
        env={str(k): v for k, v in env.items()},
        readonly=backend.get("readonly_datasets", True) is not False,
    )


def under_home(home: str, path: str) -> str:
    """A cluster path as given when absolute, else under the service account's `home`."""
    return path if path.startswith("/") else f"{home.rstrip('/')}/{path}"


def _dataset(name: Any) -> str:
    if not isinstance(name, str) or not DATASET_RE.match(name):
        raise SessionError(f"invalid dataset name {name!r}")
    return name


_clients: dict[tuple[SSHTarget, str, str | None], SlurmClient] = {}
_clients_lock = threading.Lock()


def slurm_client_for(options: SessionOptions) -> SlurmClient:
    """One SlurmClient (one SSH connection) per cluster target, shared by the hub's spawners."""
    key = (options.target, options.cluster, options.partition)
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            client = _clients[key] = SlurmClient(
                SSHConnection(options.target), cluster=options.cluster, partition=options.partition
            )
        return client


def _array(name: str, values: list[str]) -> str:
    return f"{name}=({' '.join(shlex.quote(v) for v in values)})"


def env_script(env: dict[str, str], args: list[str], datasets: dict[str, str]) -> str:
    """bash that sets the job's environment (`export K=<quoted value>` a line; a key that is
    not a plain name is refused), `portal_nb_args` (the server's extra arguments) and the
    datasets to mount (`portal_nb_ds_names` / `portal_nb_ds_paths`)."""
    lines = []
    for key, value in sorted(env.items()):
        if not ENV_KEY_RE.match(key):
            raise SessionError(f"invalid environment variable name {key!r}")
        lines.append(f"export {key}={shlex.quote(value)}")
    names = sorted(datasets)
    lines += [
        _array("portal_nb_args", args),
        _array("portal_nb_ds_names", names),
        _array("portal_nb_ds_paths", [datasets[n] for n in names]),
    ]
    return "\n".join(lines) + "\n"
