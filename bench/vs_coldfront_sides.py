"""The two sides of `bench_vs_coldfront.py`: our portal and ColdFront, each loaded through its
own `manage.py` (bench/vs_coldfront_data.py), served by its own gunicorn and logged in as a PI
through its own login form, with the pages and the request form each side is measured on."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

import requests
import vs_coldfront_data as data
from vs_coldfront_rows import CF_VERSION

ROOT = Path(__file__).resolve().parent.parent
VAR = ROOT / "var" / "bench-cf"
CF_VENV = VAR / "venv"
GUNICORN = "gunicorn==27.0.1"  # the same gunicorn as ours (requirements.txt)
WORKERS = int(os.environ.get("BENCH_WORKERS", "2"))
# Our server hands its tasks (the emails a submitted request sends) to Celery through Redis, as
# deployed, in a Redis database of its own that no worker reads and that is emptied before and
# after the run; ColdFront, as configured here, sends no email. BENCH_EAGER=1 runs the tasks in
# the request instead, as rounds before the ninth did (docs/performance.md). The cache stays in
# each process's memory, as ColdFront's (its default) and as in every round before: a Redis
# broker would otherwise make it the cache too (portal/settings.py), which production shares
# between web processes and which costs a network round trip per read (docs/performance.md).
BROKER = os.environ.get("BENCH_BROKER_URL", "redis://127.0.0.1:6379/14")
EAGER = os.environ.get("BENCH_EAGER", "") == "1"
JUSTIFICATION = (
    "We train DenseNet and ResNet classifiers on chest CT and X-ray images to detect "
    "COVID-19, sweeping learning rates and folds, then compare sensitivity, "
    "specificity and calibration across three hospitals."
)


def sh(cmd: list[str], *, cwd: Path, env: dict[str, str]) -> str:
    result = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{' '.join(cmd[:4])} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return result.stdout


def ids_from(output: str) -> dict[str, int]:
    match = re.search(r"^IDS (.*)$", output, re.M)
    if not match:
        sys.exit(f"the loader printed no ids:\n{output[-2000:]}")
    return json.loads(match.group(1))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Side:
    name: str
    db: Path
    env: dict[str, str]
    cwd: Path
    wsgi: str
    python: Path
    login_path: str
    username: str
    password: str
    request_table: str
    proc: subprocess.Popen | None = None  # set by serve()

    def manage(self, *args: str) -> str:
        raise NotImplementedError

    def upgrade(self) -> None:
        """Bring reused data up to this side's code (ColdFront's is pinned: nothing to do)."""

    def serve(self) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [
                str(self.python),
                "-m",
                "gunicorn",
                self.wsgi,
                "--bind",
                f"127.0.0.1:{self.port}",
                "--workers",
                str(WORKERS),
                "--log-level",
                "warning",
            ],
            cwd=self.cwd,
            env=self.server_env,
            start_new_session=True,
            stderr=subprocess.STDOUT,
            stdout=open(self.log, "w"),
        )  # the log closes with the process
        for _ in range(300):
            if self.proc.poll() is not None:
                sys.exit(f"{self.name}: gunicorn exited during start-up")
            try:
                requests.get(self.base + self.login_path, timeout=10)
                return
            except (requests.ConnectionError, requests.Timeout):
                time.sleep(0.2)
        sys.exit(f"{self.name}: gunicorn did not start")

    @property
    def server_env(self) -> dict[str, str]:
        """The environment gunicorn runs in (the data is loaded in `env`)."""
        return self.env

    def stop(self) -> None:
        os.killpg(self.proc.pid, signal.SIGTERM)
        self.proc.wait(timeout=30)

    def login(self) -> None:
        """Log in through the real login form; keep the cookies for wrk's Cookie header (sent
        on plain http even where the site marks them Secure, as a browser behind TLS would)."""
        session = requests.Session()
        page = session.get(self.base + self.login_path)
        csrf = session.cookies.get("csrftoken") or re.search(
            r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text
        ).group(1)
        reply = session.post(
            self.base + self.login_path,
            allow_redirects=False,
            data={
                "username": self.username,
                "password": self.password,
                "csrfmiddlewaretoken": csrf,
            },
            headers={"Referer": self.base + self.login_path},
        )
        sessionid = reply.cookies.get("sessionid")
        if reply.status_code != 302 or not sessionid:
            sys.exit(f"{self.name}: login as {self.username} failed ({reply.status_code})")
        self.csrf = session.cookies.get("csrftoken") or csrf
        self.cookie = f"sessionid={sessionid}; csrftoken={self.csrf}"

    def get(self, path: str) -> requests.Response:
        return requests.get(
            self.base + path, headers={"Cookie": self.cookie}, allow_redirects=False, timeout=60
        )

    @property
    def log(self) -> Path:
        return self.db.parent / f"gunicorn-{self.name}.log"

    def count_requests(self) -> int:
        with sqlite3.connect(self.db) as conn:
            return conn.execute(f"SELECT COUNT(*) FROM {self.request_table}").fetchone()[0]  # nosec B608 # fixed table names


class Ours(Side):
    name = "ours"
    wsgi = "portal.wsgi:application"
    login_path = "/accounts/login/"
    username, password = "pi", "bench-password"
    request_table = "allocations_allocationrequest"

    def __init__(self, folder: Path):
        self.db = folder / "ours.sqlite3"
        self.cwd, self.python = ROOT, Path(sys.executable)
        self.env = {
            **os.environ,
            "DATABASE_URL": f"sqlite:///{self.db}",
            "DEBUG": "false",
            "SECRET_KEY": "bench-only-secret-key-" + "x" * 40,
            "EMAIL_URL": "dummy://",
            "CELERY_TASK_ALWAYS_EAGER": "true",
            "CELERY_BROKER_URL": "memory://",
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "DB_CONN_MAX_AGE": "600",
        }

    @property
    def server_env(self) -> dict[str, str]:
        if EAGER:
            return self.env
        return {
            **self.env,
            "CELERY_TASK_ALWAYS_EAGER": "false",
            "CELERY_BROKER_URL": BROKER,
            "CACHE_URL": "",
        }

    def manage(self, *args: str) -> str:
        return sh([sys.executable, "manage.py", *args], cwd=ROOT, env=self.env)

    def upgrade(self) -> None:
        """The tree's migrations may be newer than data a previous run loaded (an index added
        since): apply them to the restored database, as a deployment would."""
        self.manage("migrate", "--noinput", "-v0")

    def load(self, scale: str) -> dict[str, int]:
        self.manage("migrate", "--noinput", "-v0")
        self.manage("seed_demo", "--password", self.password)
        ids = ids_from(self.manage("shell", "-c", data.OURS_DEMO))
        if scale in data.SHAPES:  # the demo data, then the scale's own on top
            ids = ids_from(self.manage("shell", "-c", data.script(data.OURS_LARGE, scale)))
        return ids

    def pages(self, ids: dict[str, int]) -> dict[str, str | None]:
        return {
            "project list": "/",
            "allocation detail": f"/allocations/{ids['allocation']}/",
            "request detail": f"/requests/{ids['request']}/",
            "API allocations": "/api/v1/allocations/",
            "API requests": "/api/v1/requests/",
            "API jobs": "/api/v1/jobs/",
        }

    def post(self, ids: dict[str, int]) -> tuple[str, str]:
        today = time.strftime("%Y-%m-%d")
        end = time.strftime("%Y-%m-%d", time.localtime(time.time() + 80 * 86400))
        return "/requests/new/", urllib.parse.urlencode(
            {
                "csrfmiddlewaretoken": self.csrf,
                "project": ids["project"],
                "facility": "jade2",
                "kind": "full",
                "purpose": "new",
                "cpu_hours": 0,
                "gpu_hours": 100,
                "start_date": today,
                "end_date": end,
                "data_sensitivity": "public",
                "justification": JUSTIFICATION,
            }
        )


class ColdFront(Side):
    name = "ColdFront"
    wsgi = "coldfront.config.wsgi:application"
    login_path = "/user/login"
    username, password = "cgray", "test1234"
    request_table = "allocation_allocation"

    def __init__(self, folder: Path):
        self.cwd = folder / "coldfront"
        self.cwd.mkdir(parents=True, exist_ok=True)
        self.db = self.cwd / "coldfront.db"
        self.python = CF_VENV / "bin" / "python"
        env_file = self.cwd / "coldfront.env"
        env_file.write_text(
            "SECRET_KEY=bench-only-secret-key-" + "y" * 40 + "\nDEBUG=False\n"
            "PLUGIN_API=True\nALLOWED_HOSTS=127.0.0.1,localhost\n"
        )
        self.env = {
            "PATH": os.environ["PATH"],
            "HOME": os.environ.get("HOME", "/root"),
            "COLDFRONT_ENV": str(env_file),
        }

    def manage(self, *args: str) -> str:
        return sh([str(CF_VENV / "bin" / "coldfront"), *args], cwd=self.cwd, env=self.env)

    def load(self, scale: str) -> dict[str, int]:
        self.manage("initial_setup", "-f")
        self.manage("load_test_data")
        ids = ids_from(self.manage("shell", "-c", data.CF_DEMO))
        if scale in data.SHAPES:
            ids = ids_from(self.manage("shell", "-c", data.script(data.CF_LARGE, scale)))
        return ids

    def pages(self, ids: dict[str, int]) -> dict[str, str | None]:
        return {
            "project list": "/project/",
            "allocation detail": f"/allocation/{ids['allocation']}/",
            "request detail": f"/allocation/{ids['request']}/",
            "API allocations": "/api/allocations/",
            "API requests": None,
            "API jobs": None,
        }

    def post(self, ids: dict[str, int]) -> tuple[str, str]:
        path = f"/allocation/project/{ids['project']}/create"
        # The first resource its own form offers this PI (the form refuses any other).
        select = re.search(r'<select name="resource".*?</select>', self.get(path).text, re.S)
        resource = re.search(r'<option value="(\d+)"', select.group(0)).group(1)
        return path, urllib.parse.urlencode(
            {
                "csrfmiddlewaretoken": self.csrf,
                "resource": resource,
                "quantity": 1,
                "justification": JUSTIFICATION,
                "project": ids["project"],
                "is_changeable": "True",
            }
        )


def ensure_coldfront() -> None:
    """ColdFront from PyPI into its own virtualenv, once (a marker file says it is done)."""
    marker = CF_VENV / f".coldfront-{CF_VERSION}"
    if marker.exists():
        return
    VAR.mkdir(parents=True, exist_ok=True)
    sh([sys.executable, "-m", "venv", "--clear", str(CF_VENV)], cwd=ROOT, env=dict(os.environ))
    sh(
        [str(CF_VENV / "bin" / "pip"), "install", "-q", f"coldfront=={CF_VERSION}", GUNICORN],
        cwd=ROOT,
        env=dict(os.environ),
    )
    marker.touch()
