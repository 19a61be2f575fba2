"""`LocalNotebookSpawner`: the single-user server as a supervised child process on this machine
(the local backend, what `make run` uses).

From the portal's user_options (NOTEBOOKS.md): `workdir` is the server's working directory and
root (it outlives the session), `datasets/<name>` in it are symlinks to the registered dataset
paths (a symlink cannot make its target read-only: on this backend the dataset folders' own
permissions protect them; the Slurm backend mounts them read-only), `run_dir` holds
`record.json` (written by supervisor.py) and the server's log, `hours` is the hard stop, and
CUDA_VISIBLE_DEVICES is `backend_options["cuda_visible_devices"]` (a list of indices or a
string; "" without GPUs).

The server runs as the member (`backend_options["run_as"]`, launcher/local/contain.py): the
supervisor stays the hub's (root) and drops to the member's uid, own group and the project's
group for the server; the member's home is its HOME, the workdir, its `datasets/` and the runtime
folder are the member's, `run_dir` and the record in it are not (the member cannot write the
basis of its own charge). At Stop, the time limit or the idle cull the supervisor kills every
process the session started, setsid ones included (it is their subreaper)."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path
from subprocess import Popen

from jupyterhub.spawner import LocalProcessSpawner
from jupyterhub.utils import random_port
from tornado import web
from traitlets import Float, Unicode

SUPERVISOR = Path(__file__).resolve().with_name("supervisor.py")
RECORD = "record.json"


def cuda_visible_devices(backend_options: dict) -> str:
    value = backend_options.get("cuda_visible_devices", "")
    if isinstance(value, (list, tuple)):
        return ",".join(str(int(index)) for index in value)
    return str(value)


def link_datasets(workdir: Path, datasets: dict) -> None:
    """`workdir/datasets/<name>` -> each dataset path; links of datasets no longer given go."""
    folder = workdir / "datasets"
    folder.mkdir(exist_ok=True)
    for entry in folder.iterdir():
        if entry.is_symlink() and entry.name not in datasets:
            entry.unlink()
    for name, target in datasets.items():
        if "/" in name or name in {"", ".", ".."}:
            raise web.HTTPError(400, f"dataset name {name!r} is not a plain name")
        link = folder / name
        if link.is_symlink():
            if os.readlink(link) == str(target):
                continue
            link.unlink()
        elif link.exists():
            raise web.HTTPError(409, f"{link} is the user's own, not a dataset link: rename it")
        link.symlink_to(target, target_is_directory=True)


def give_to_member(run_as: dict, workdir: Path, run_dir: Path) -> None:
    """The member's own folders: the workdir and its datasets/ (member:project group, 2770),
    the home and the runtime folder (0700); run_dir stays the hub's, traversable only."""
    uid, gid = int(run_as["uid"]), int(run_as["gid"])
    group = int((run_as.get("groups") or [gid])[0])
    for folder, owner, mode in (
        (workdir, group, 0o2770),
        (workdir / "datasets", group, 0o2770),
        (run_dir / "runtime", gid, 0o700),
    ):
        os.chown(folder, uid, owner)
        folder.chmod(mode)
    home = Path(run_as.get("home") or run_dir / "home")
    home.mkdir(parents=True, exist_ok=True)
    os.chown(home, uid, gid)
    home.chmod(0o700)
    run_dir.chmod(0o711)


class LocalNotebookSpawner(LocalProcessSpawner):
    """jupyterhub-singleuser under supervisor.py, as the hub's own unix user (like the local
    backend's jobs), in the session's workdir."""

    kill_grace = Float(
        10.0, config=True, help="Seconds between SIGTERM and SIGKILL at the hard stop."
    )
    python = Unicode(sys.executable, config=True, help="The Python that runs the supervisor.")
    run_dir = Unicode("")
    port: int  # the Spawner's traitlet, for the type checker (jupyterhub ships no types)

    def _options(self) -> tuple[Path, Path, float]:
        options = self.user_options or {}
        try:
            workdir = Path(options["workdir"])
            run_dir = Path(options["run_dir"])
            hours = float(options["hours"])
        except (KeyError, TypeError, ValueError) as error:
            raise web.HTTPError(
                400, f"user_options need workdir, run_dir and hours ({error})"
            ) from error
        if not workdir.is_absolute() or not run_dir.is_absolute() or hours <= 0:
            raise web.HTTPError(400, "workdir and run_dir must be absolute, hours > 0")
        return workdir, run_dir, hours

    def make_preexec_fn(self, name):
        return None  # the supervisor drops to the member's uid (run_as), not the hub user's name

    def _run_as(self) -> dict | None:
        return ((self.user_options or {}).get("backend_options") or {}).get("run_as") or None

    def user_env(self, env):
        run_as = self._run_as()
        env["USER"] = run_as["login"] if run_as else self.user.name
        env["LOGNAME"] = env["USER"]
        # start() sets run_dir first
        env["HOME"] = run_as["home"] if run_as else str(Path(self.run_dir) / "home")
        env["SHELL"] = "/bin/bash"
        return env

    def get_args(self):
        args = super().get_args()
        if os.geteuid() == 0 and not self._run_as():  # only when the portal cannot switch
            args.append("--ServerApp.allow_root=True")
        return args

    def get_env(self):
        env = super().get_env()
        options = self.user_options or {}
        env["CUDA_VISIBLE_DEVICES"] = cuda_visible_devices(options.get("backend_options") or {})
        env["JUPYTER_RUNTIME_DIR"] = str(Path(self.run_dir) / "runtime")
        env["PORTAL_NOTEBOOK_SESSION"] = str(options.get("session", ""))
        return env

    async def start(self):
        workdir, run_dir, hours = self._options()
        datasets = (self.user_options or {}).get("datasets") or {}
        run_as = self._run_as()
        for folder in (workdir, run_dir, run_dir / "home", run_dir / "runtime"):
            folder.mkdir(parents=True, exist_ok=True)
        link_datasets(workdir, datasets)
        if run_as:
            give_to_member(run_as, workdir, run_dir)
        self.run_dir = str(run_dir)
        self.notebook_dir = str(workdir)
        (run_dir / RECORD).unlink(missing_ok=True)
        if self.port == 0:
            self.port = random_port()
        env = self.get_env()
        server_cmd = [*self.cmd, *self.get_args()]
        cmd = [
            self.python,
            str(SUPERVISOR),
            "--record",
            str(run_dir / RECORD),
            "--hours",
            repr(hours),
            "--grace",
            repr(self.kill_grace),
            "--log",
            str(run_dir / "server.log"),
        ]
        if run_as:
            cmd += ["--run-as", json.dumps(run_as)]
        limits = ((self.user_options or {}).get("backend_options") or {}).get("limits")
        if limits:
            cmd += ["--limits", json.dumps(limits)]
        cmd += ["--", *server_cmd]
        self.log.info("Spawning %s in %s", " ".join(shlex.quote(s) for s in cmd), workdir)
        # As LocalProcessSpawner.start does: a fork and exec, over at once.
        self.proc = Popen(
            cmd,
            env=env,
            cwd=str(workdir),
            start_new_session=True,  # noqa: ASYNC220
            **self.popen_kwargs,
        )
        self.pid = self.proc.pid
        return (self.ip or "127.0.0.1", self.port)

    def get_state(self):
        state = super().get_state()
        if self.run_dir:
            state["run_dir"] = self.run_dir
        return state

    def load_state(self, state):
        super().load_state(state)
        self.run_dir = state.get("run_dir", "")

    def clear_state(self):
        super().clear_state()
        self.run_dir = ""
