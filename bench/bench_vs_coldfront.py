"""Our portal against ColdFront 1.1.10, side by side in one run, on the same machine.

Both are served by gunicorn with the same number of sync workers (BENCH_WORKERS, default 2),
each on SQLite, each logged in as a PI (ColdFront: cgray; ours: pi), and both get the same wrk
commands on the equivalent pages:

| row | ours | ColdFront 1.1.10 |
|---|---|---|
| project list | `/` (dashboard) | `/project/` |
| allocation detail | `/allocations/<id>/` | `/allocation/<id>/` |
| request detail | `/requests/<id>/` | `/allocation/<id>/` of a "New" allocation (its requests) |
| request POST | `POST /requests/new/` (form) | `POST /allocation/project/<id>/create` (form) |
| API allocations | `GET /api/v1/allocations/` | `GET /api/allocations/` (its read-only API plugin) |
| API requests | `GET /api/v1/requests/` | none for a PI (`/api/allocation-requests/` is admin-only) |
| API jobs | `GET /api/v1/jobs/` | none (ColdFront launches no work) |

Two scales (bench/vs_coldfront_data.py): each side's demo data, and each side loaded with the
same larger data through its own ORM. ColdFront is installed from PyPI into its own virtualenv
under var/bench-cf/ once. A POST row counts the rows each side really created, so a refused form
cannot pass for a fast one. Prints one table and writes bench/out/vs_coldfront.json.

Paired rounds: both servers run at once (an idle gunicorn takes no CPU) and each row is measured
on both sides back to back, BENCH_ROUNDS times (default 3), the side that goes first alternating
from round to round (the reads' rounds first, then the POSTs', so no page reads the rows a
POST added). A row's figures are each side's median over the rounds and its ratios the
median of the rounds' own ratios, with their range; so a change in the machine's load between
one side's turn and the other's moves a round's ratio, not the result (before the twelfth round
ColdFront was measured whole, then ours, minutes later: docs/performance.md).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

import redis
import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
import vs_coldfront_data as data  # noqa: E402
from vs_coldfront_rows import CF_VERSION, ROWS, report, rounds_row  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
VAR = ROOT / "var" / "bench-cf"
CF_VENV = VAR / "venv"
GUNICORN = "gunicorn==27.0.1"  # the same gunicorn as ours (requirements.txt)
WORKERS = int(os.environ.get("BENCH_WORKERS", "2"))
DURATION = os.environ.get("BENCH_DURATION", "6s")  # each round
SEQ_DURATION = os.environ.get("BENCH_SEQ_DURATION", "3s")
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
SCALES = os.environ.get("BENCH_SCALES", "demo,large").split(",")
# BENCH_KEEP_DATA=1: reuse the data a previous run loaded (var/bench-cf/<scale>/, ids.json)
# instead of loading it again (minutes on a busy machine); each run still starts both servers
# afresh, each on its database as it was loaded (a copy kept beside it, `<db>.loaded`), so the
# rows an earlier run's POSTs added (hundreds) do not slow the next run's list endpoints.
KEEP_DATA = os.environ.get("BENCH_KEEP_DATA", "") == "1"
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


# ---- the two sides ---------------------------------------------------------------------------


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

    def load(self, scale: str) -> dict[str, int]:
        self.manage("migrate", "--noinput", "-v0")
        self.manage("seed_demo", "--password", self.password)
        ids = ids_from(self.manage("shell", "-c", data.script(data.OURS_DEMO)))
        if scale == "large":
            ids = ids_from(self.manage("shell", "-c", data.script(data.OURS_LARGE)))
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
        ids = ids_from(self.manage("shell", "-c", data.script(data.CF_DEMO)))
        if scale == "large":
            ids = ids_from(self.manage("shell", "-c", data.script(data.CF_LARGE)))
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


# ---- measuring -------------------------------------------------------------------------------


def wrk(
    side: Side, path: str, connections: int, duration: str, *, body: str | None = None
) -> dict[str, float]:
    script = "wrk_form_post.lua" if body is not None else "wrk_report.lua"
    cmd = [
        "wrk",
        "-t",
        str(min(connections, 2)),
        "-c",
        str(connections),
        "-d",
        duration,
        "--timeout",
        "30s",
        "-s",
        str(ROOT / "bench" / script),
        "-H",
        f"Cookie: {side.cookie}",
        "-H",
        f"Referer: {side.base}{path}",
        side.base + path,
    ]
    env = {
        **os.environ,
        "BENCH_REPORT_LUA": str(ROOT / "bench" / "wrk_report.lua"),
        "BENCH_BODY": body or "",
    }
    out = subprocess.run(cmd, capture_output=True, text=True, env=env).stdout
    match = re.search(r"RESULT (.*)", out)
    if not match:
        sys.exit(f"wrk gave no result for {side.name} {path}:\n{out}")
    return {k: float(v) for k, v in (kv.split("=") for kv in match.group(1).split())}


def measure(side: Side, path: str, *, body: str | None = None) -> dict[str, float]:
    before = side.count_requests() if body is not None else 0
    seq = wrk(side, path, 1, SEQ_DURATION, body=body)
    c8 = wrk(side, path, 8, DURATION, body=body)
    result = {
        "seq_p50": seq["p50"],
        "seq_p95": seq["p95"],
        "c8_rps": c8["rps"],
        "c8_p99": c8["p99"],
        "errors": seq["errors"] + c8["errors"],
    }
    if body is not None:
        sent = seq["requests"] + c8["requests"]
        created = side.count_requests() - before
        if created < 0.95 * sent:  # wrk may count a few in flight when it stops
            sys.exit(
                f"{side.name}: {int(sent)} POSTs created only {created} rows: the form "
                "was refused, so the timing would not be a request being made"
            )
        result["created"] = created
    return result


def check_page(side: Side, path: str) -> None:
    reply = side.get(path)
    if reply.status_code != 200:
        sys.exit(f"{side.name}: {path} answered {reply.status_code}")


def run_scale(scale: str) -> list[dict]:
    folder = VAR / scale
    saved = folder / "ids.json"
    reuse = (
        KEEP_DATA
        and saved.exists()
        and all(
            (folder / name).exists()
            for name in ("ours.sqlite3.loaded", "coldfront/coldfront.db.loaded")
        )
    )
    if not reuse:
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
    sides = [ColdFront(folder), Ours(folder)]
    started = time.monotonic()
    if reuse:
        ids = json.loads(saved.read_text())
        for side in sides:  # as loaded: not with the rows an earlier run's POSTs added
            shutil.copy(side.db.with_name(side.db.name + ".loaded"), side.db)
        print(f"[{scale}] data of a previous run reused ({saved})", flush=True)
    else:
        ids = {side.name: side.load(scale) for side in sides}
        for side in sides:
            shutil.copy(side.db, side.db.with_name(side.db.name + ".loaded"))
        saved.write_text(json.dumps(ids))
        print(f"[{scale}] data loaded in {time.monotonic() - started:.0f} s", flush=True)
    try:
        for side in sides:  # both at once: each row is measured on both sides back to back
            side.serve()
        plans = {}
        for side in sides:
            side.login()
            pages = {row: path for row, path in side.pages(ids[side.name]).items() if path}
            for path in pages.values():
                check_page(side, path)
            plans[side.name] = (pages, side.post(ids[side.name]))
        rounds: list[dict[str, dict[str, dict]]] = [
            {side.name: {} for side in sides} for _ in range(ROUNDS)
        ]
        # The reads first, every round of them, then the POSTs: a POST adds rows (hundreds)
        # that the list pages would otherwise read in the next round, on either side.
        for phase in ([row for row in ROWS if row != "request POST"], ["request POST"]):
            for number, results in enumerate(rounds):
                order = sides if number % 2 == 0 else sides[::-1]
                for row in phase:
                    for side in order:
                        pages, (post_path, body) = plans[side.name]
                        if row == "request POST":
                            results[side.name][row] = measure(side, post_path, body=body)
                        elif row in pages:
                            results[side.name][row] = measure(side, pages[row])
                print(
                    f"[{scale}] {'POST' if phase == ['request POST'] else 'reads'}: round "
                    f"{number + 1} of {ROUNDS} done",
                    flush=True,
                )
    finally:
        for side in sides:
            if side.proc is not None:
                side.stop()
    return [rounds_row(scale, row, rounds) for row in ROWS]


def empty_broker() -> None:
    """The bench's own Redis database, emptied (the tasks our POSTs queued are never run)."""
    if EAGER:
        return
    try:
        redis.Redis.from_url(BROKER).flushdb()
    except redis.ConnectionError:
        sys.exit(f"Redis does not answer at {BROKER}: run `make services` (or BENCH_EAGER=1)")


def main() -> None:
    if not shutil.which("wrk"):
        sys.exit("wrk is not installed: run `make services` (it installs wrk)")
    ensure_coldfront()
    empty_broker()
    load_before = os.getloadavg()
    try:
        rows = [row for scale in SCALES for row in run_scale(scale)]
    finally:
        empty_broker()
    report(
        rows,
        f"gunicorn {WORKERS} sync workers each, SQLite each, logged in as a PI; "
        f"{ROUNDS} paired rounds of wrk -c8 {DURATION} and -c1 {SEQ_DURATION}",
    )
    out = ROOT / "bench" / "out"
    out.mkdir(parents=True, exist_ok=True)
    meta = {
        "workers": WORKERS,
        "rounds": ROUNDS,
        "duration": DURATION,
        "seq_duration": SEQ_DURATION,
        "coldfront": CF_VERSION,
        "cpus": os.cpu_count(),
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg(),
        "shape": data.SHAPE,
    }
    (out / "vs_coldfront.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    print(
        f"Load average before/after: {load_before[0]:.2f} / {meta['loadavg_after'][0]:.2f}; "
        f"written to {out / 'vs_coldfront.json'}"
    )


if __name__ == "__main__":
    main()
