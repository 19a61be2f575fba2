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
import secrets
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from jupyterhub.spawner import Spawner
from traitlets import Float, Integer, default

from launcher.backends.errors import BackendError
from launcher.slurm.client import NOTEBOOK_JOB_PREFIX, SlurmClient
from launcher.slurm.parse import map_state
from launcher.slurm.records import JobSpec, JobState

from .slurm_options import (
    MAX_GPUS,
    MAX_HOURS,
    SessionError,
    SessionOptions,
    env_script,
    session_options,
    slurm_client_for,
    under_home,
)
from .slurm_scripts import BATCH_SCRIPT, DATASETS_SCRIPT, LOOK_SCRIPT, PREPARE_SCRIPT

__all__ = [
    "MAX_GPUS",
    "MAX_HOURS",
    "SessionError",
    "SessionOptions",
    "SlurmNotebookSpawner",
    "env_script",
    "session_options",
    "slurm_client_for",
]


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
            run_dir=under_home(home, options.run_dir),
            workdir=under_home(home, options.workdir),
            jobs_dir=under_home(home, options.jobs_dir),
            datasets={k: under_home(home, v) for k, v in options.datasets.items()},
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
