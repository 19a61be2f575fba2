"""SlurmNotebookSpawner: a notebook session as a Slurm batch job, over the portal's SSH transport.

batchspawner's design (submit a batch script that runs `jupyterhub-singleuser`, wait for the job
to run, learn where it listens, poll with squeue/sacct, stop with scancel) over the Slurm
backend's own pieces: `SSHConnection` (pinned host key, RejectPolicy, argument lists quoted with
shlex) and `SlurmClient` (idempotent sbatch per job name, squeue/sacct states, scancel). No
Django: the hub imports this module.

What the portal sends (user_options; docs/notebooks-slurm.md): `session`, `gpus`, `hours`, and in
`backend_options` what `SlurmBackend.notebook_options` returned: the SSH facts, cluster, account,
partition, the member's cluster login, the session's `workdir`, `run_dir` and `datasets` on the
cluster, the compute-side `python` and extra `env`.

The job runs as the member's cluster login (`login`): it is submitted with `sudo -n -u <login>
sbatch` through the site's narrow sudoers rule (docs/security.md), never as the service
account, and a session with no login, or one sudo refuses, fails with that reason.

On the cluster, in `run_dir` (owned by the service account, mode 700, shared with the member
alone by an ACL): `env.sh` (the hub's JUPYTERHUB_* variables and the session's settings, one
`export K=<shlex.quote(v)>` a line, mode 640), `notebook.sh` (fixed text: it sources env.sh,
makes the workdir's datasets/ as the member (`datasets.sh`), picks a free port, writes `<host>
<port>` to `endpoint-<job id>` and execs the single-user server in `workdir`), and Slurm's log
`slurm-<job id>.out`. What the job writes (the endpoint, the log) is read as the member. The job
is `portal-nb-<session>-<token>` under `--account=<allocation account> --gres=gpu:N
--time=<minutes>`; Slurm sets CUDA_VISIBLE_DEVICES for the GPUs it gives. While it is pending,
`reason` (Slurm's: Resources, Priority, ...) is in the server's state and in the progress
messages.
"""

from __future__ import annotations

import asyncio
import math
import re
import secrets
import shlex
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from jupyterhub.spawner import Spawner
from traitlets import Float, Integer, default

from launcher.backends.errors import BackendError, check_name
from launcher.slurm.client import NOTEBOOK_JOB_PREFIX, SlurmClient
from launcher.slurm.parse import map_state
from launcher.slurm.records import JobSpec, JobState
from launcher.slurm.ssh import SSHConnection, SSHTarget

from .slurm_scripts import BATCH_SCRIPT, DATASETS_SCRIPT, LOOK_SCRIPT, PREPARE_SCRIPT

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


def _absolute(home: str, path: str) -> str:
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


class SlurmNotebookSpawner(Spawner):
    """A notebook session as a Slurm job under the allocation's account (see the module doc)."""

    status_interval = Float(0.5, help="Seconds between looks at the job while it starts.").tag(
        config=True
    )
    stop_wait = Integer(30, help="Seconds stop() waits for Slurm to end the job.").tag(config=True)

    @default("start_timeout")
    def _start_timeout_default(self) -> int:
        return 3600  # a session may wait in the queue; the portal can cancel it meanwhile

    @default("http_timeout")
    def _http_timeout_default(self) -> int:
        return 120

    @default("poll_interval")
    def _poll_interval_default(self) -> int:
        return 10

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.job_id = ""
        self.job_name = ""
        self.job_state = ""
        self.reason = ""
        self.node = ""
        self.devices = ""  # CUDA_VISIBLE_DEVICES as Slurm set it in the job
        self.account = ""
        self.run_dir = ""
        self.target: dict[str, Any] = {}
        self._options: SessionOptions | None = None
        self._events: list[dict[str, Any]] = []
        self._starting = False

    # -- state ---------------------------------------------------------------------------------

    def get_state(self) -> dict[str, Any]:
        state = super().get_state()
        if self.job_id or self.job_name:
            state.update(
                job_id=self.job_id,
                job_name=self.job_name,
                job_state=self.job_state,
                reason=self.reason,
                node=self.node,
                devices=self.devices,
                account=self.account,
                run_dir=self.run_dir,
            )
        return state

    def load_state(self, state: dict[str, Any]) -> None:
        super().load_state(state)
        self.job_id = str(state.get("job_id") or "")
        self.job_name = str(state.get("job_name") or "")
        self.job_state = str(state.get("job_state") or "")
        self.reason = str(state.get("reason") or "")
        self.node = str(state.get("node") or "")
        self.devices = str(state.get("devices") or "")
        self.account = str(state.get("account") or "")
        self.run_dir = str(state.get("run_dir") or "")

    def clear_state(self) -> None:
        super().clear_state()
        self.job_id = self.job_name = self.job_state = self.reason = self.node = self.devices = ""
        self.account = self.run_dir = ""

    # -- helpers -------------------------------------------------------------------------------

    def _client(self) -> SlurmClient:
        if self._options is None:
            self._options = session_options(self.user_options or {})
        return slurm_client_for(self._options)

    def _event(self, message: str, progress: int | None = None) -> None:
        event: dict[str, Any] = {"message": message}
        if progress is not None:
            event["progress"] = progress
        self._events.append(event)
        self.log.info("%s: %s", self._log_name, message)

    def _job_env(self, options: SessionOptions) -> dict[str, str]:
        env = {k: v for k, v in self.get_env().items() if k.startswith(("JUPYTERHUB_", "JPY_"))}
        env.update(options.env)
        env.update(
            PORTAL_NB_PYTHON=options.python,
            PORTAL_NB_WORKDIR=options.workdir,
            PORTAL_NB_SESSION=str(options.session),
            PORTAL_NB_READONLY="1" if options.readonly else "0",
        )
        return env

    def _prepare(self, client: SlurmClient, options: SessionOptions) -> None:
        """The session's run_dir (and a fallback workdir), shared with the member alone, and
        its three files. The member's workdir in project storage is the job's own business."""
        result = client.ssh.run(
            [
                "bash",
                "-c",
                PREPARE_SCRIPT,
                "portal-nb-prepare",
                options.run_dir,
                options.jobs_dir,
                options.login,
                options.workdir if options.make_workdir else "",
            ]
        )
        if result.rc == 78:
            raise BackendError(
                f"could not share the session's folder with {options.login} "
                f"({' '.join(result.stderr.split())[:200]}): the portal's jobs folder on the "
                "cluster must be on a file system with POSIX ACLs (docs/security.md)",
                permanent=True,
            )
        if not result.ok():
            raise BackendError(
                f"preparing the session folders failed: {result.stderr.strip()[:300]}",
                permanent=True,
            )
        script = env_script(
            self._job_env(options), [str(a) for a in self.get_args()], options.datasets
        )
        # Group bits are the ACL's mask: 640/750 let the member read them, and nobody else.
        client.ssh.write_file(f"{options.run_dir}/env.sh", script.encode(), mode=0o640)
        client.ssh.write_file(
            f"{options.run_dir}/datasets.sh", DATASETS_SCRIPT.encode(), mode=0o640
        )
        client.ssh.write_file(f"{options.run_dir}/notebook.sh", BATCH_SCRIPT.encode(), mode=0o750)

    def _login(self) -> str:
        if self._options is None:
            self._options = session_options(self.user_options or {})
        return self._options.login

    def _look(self, client: SlurmClient) -> tuple[str, str, str, str]:
        """(Slurm state word, reason, node, endpoint file text) in one SSH round trip; the
        endpoint (which the job wrote) is read as the member."""
        result = client.ssh.run(
            [
                "bash",
                "-c",
                LOOK_SCRIPT,
                "portal-nb-look",
                self.job_id,
                f"{self.run_dir}/endpoint-{self.job_id}",
                self._login(),
            ]
        )
        queue, _, endpoint = result.stdout.partition("--\n")
        line = queue.strip().splitlines()[0] if queue.strip() else ""
        state, reason, node = (line.split("|") + ["", "", ""])[:3]
        return state, ("" if reason == "None" else reason), node, endpoint.strip()

    # -- the Spawner API -----------------------------------------------------------------------

    async def start(self) -> str:
        """Submit the session's job, wait until it runs and says where it listens."""
        options = session_options(self.user_options or {})
        client = slurm_client_for(options)
        # Paths relative to the service account's home become absolute: the job runs in
        # run_dir (Slurm reads --output relative to it), and cds to workdir from there.
        home = await asyncio.to_thread(client.ssh.home)
        self._options = options = replace(
            options,
            run_dir=_absolute(home, options.run_dir),
            workdir=_absolute(home, options.workdir),
            jobs_dir=_absolute(home, options.jobs_dir),
            datasets={k: _absolute(home, v) for k, v in options.datasets.items()},
        )
        self._starting, self._events = True, []
        self.account, self.run_dir = options.account, options.run_dir
        self.target = {"host": options.target.host, "port": options.target.port}
        self.job_name = f"{NOTEBOOK_JOB_PREFIX}{options.session}-{secrets.token_hex(4)}"
        self.job_state, self.reason = "SUBMITTING", ""
        try:
            await asyncio.to_thread(self._prepare, client, options)
            spec = JobSpec(
                token=self.job_name,
                account=options.account,
                bundle_dir=Path("."),
                workdir=options.run_dir,
                script="notebook.sh",
                args=(options.run_dir,),
                gpus=options.gpus,
                time_limit_minutes=options.minutes,
                checkpoint_signal_seconds=0,
                partition=options.partition,
                comment=f"portal notebook {options.session} for {options.login}",
            )
            # A stop that interrupts the start cannot stop sbatch's thread: let it finish, so
            # the job it made is known and stop() cancels it instead of leaving it queued.
            # As the member (sudo); a refusal is a permanent error that says so.
            submitting = asyncio.ensure_future(
                asyncio.to_thread(client.submit, spec, user=options.login)
            )
            try:
                submitted = await asyncio.shield(submitting)
            except asyncio.CancelledError:
                self.job_id = (await submitting).job_id
                raise
            self.job_id, self.job_state = submitted.job_id, "PENDING"
            self._event(f"Submitted Slurm job {self.job_id} on account {options.account}", 20)
            return await self._wait_until_listening(client)
        finally:
            self._starting = False

    async def _wait_until_listening(self, client: SlurmClient) -> str:
        said = ""
        while True:
            state, reason, node, endpoint = await asyncio.to_thread(self._look, client)
            if state:
                self.job_state, self.reason, self.node = state, reason, node
            word = map_state(state) if state else JobState.UNKNOWN
            if word is JobState.PENDING and f"{state}{reason}" != said:
                said = f"{state}{reason}"
                self._event(f"Waiting in the Slurm queue: {reason or 'not scheduled yet'}", 30)
            elif word is JobState.RUNNING and endpoint:
                host, port, self.devices = (endpoint.split(" ") + ["", ""])[:3]
                if not port.isdigit():
                    raise BackendError(
                        f"job {self.job_id} wrote a bad endpoint {endpoint!r}", permanent=True
                    )
                self.reason = ""
                self._event(
                    f"Slurm job {self.job_id} is running on {host}; JupyterLab is starting", 70
                )
                return f"http://{host}:{int(port)}"
            elif word.final or word is JobState.PREEMPTED:
                log = f"{self.run_dir}/slurm-{self.job_id}.out"
                last = await asyncio.to_thread(self._last_words, client, log)
                raise BackendError(
                    f"Slurm job {self.job_id} ended before the notebook started ({state} {reason})"
                    f"{f': {last}' if last else ''}; its log: {log}",
                    permanent=True,
                )
            await asyncio.sleep(self.status_interval)

    def _last_words(self, client: SlurmClient, log: str) -> str:
        """The last line of the job's log (read as the member), or "" if none can be read."""
        try:
            text = client.tail_as(self._login(), log, lines=5) or ""
        except BackendError:
            return ""
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        return lines[-1][:300] if lines else ""

    async def progress(self) -> AsyncIterator[dict[str, Any]]:
        """The start's events as they happen (the queue reason while the job is pending)."""
        sent = 0
        while True:
            while sent < len(self._events):
                yield self._events[sent]
                sent += 1
            if not self._starting:
                break
            await asyncio.sleep(0.5)

    async def poll(self) -> int | None:
        """None while the job is pending or running; its exit code (1 if none) once it ended."""
        if not self.job_id:
            return 0
        try:
            status = (await asyncio.to_thread(self._client().status, [self.job_id]))[self.job_id]
        except BackendError as error:
            if error.permanent:
                raise
            self.log.warning("%s: cannot poll Slurm now: %s", self._log_name, error)
            return None
        if status.state in (JobState.PENDING, JobState.RUNNING, JobState.UNKNOWN):
            self.reason = status.reason if status.state is JobState.PENDING else ""
            return None
        self.job_state, self.reason = status.state.value.upper(), status.reason
        return status.exit_code or 1

    async def stop(self, now: bool = False) -> None:
        """scancel the job (pending or running) and wait a little for Slurm to end it."""
        if not (self.job_id or self.job_name):
            return  # never submitted (refused options, or stopped before)
        client = self._client()
        if not self.job_id:  # stopped while submitting: find it by name
            found = await asyncio.to_thread(client.find_job_by_token, self.job_name)
            self.job_id = found or ""
        if not self.job_id:
            return
        await asyncio.to_thread(client.cancel, self.job_id)
        for _ in range(int(self.stop_wait / 0.5)):
            status = (await asyncio.to_thread(client.status, [self.job_id]))[self.job_id]
            if status.state not in (JobState.PENDING, JobState.RUNNING):
                self.job_state = status.state.value.upper()
                return
            await asyncio.sleep(0.5)
        self.log.warning("%s: Slurm job %s still ending after scancel", self._log_name, self.job_id)
