"""40 researchers open a notebook on the `local` facility at once, each runs a cell and stops it
(issue 34's load check: every session under its own uid, on this machine).

The `make run` shape in a throwaway var folder (0711, umask 077: SQLite, the filesystem Celery
transport, a real `celery worker -B`, runserver on BENCH_PORT (8102), and JupyterHub with its
proxy on 8181-8183 signing on through the portal). N users (BENCH_NOTEBOOK_USERS, 40) are made
members of the demo project with an active trial on `local`; then, all at once, each one
POSTs /api/v1/notebooks/ (1 slot of `local`'s CPU node, 1 hour), polls its session until the API says
`running`, runs a cell in its JupyterLab over the kernel's websocket (the cell prints its uid:
the check that it runs as its own account), POSTs stop/ and polls until the session is charged.

The table: sessions started, the p50/p95 from "Open" to a running session and to the first cell's
answer (a usable JupyterLab), distinct uids seen, sessions charged, processes of the members'
accounts left once all are stopped. Needs root (the members' accounts) and `make install`.

Run: python bench/bench_notebook_users.py [--users N] [--keep]
"""

from __future__ import annotations

import argparse
import concurrent.futures as futures
import datetime as dt
import json
import os
import pwd
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PORT = int(os.environ.setdefault("BENCH_PORT", "8102"))  # before bench_local_loop reads it
HUB_PORT = int(os.environ.get("BENCH_HUB_PORT", "8181"))

from bench.bench_local_loop import allocation_on, embedded_env  # noqa: E402
from bench.bench_local_loop import call as call_once  # noqa: E402
from tests.notebooks.kernel import run_cell, server_token  # noqa: E402

MAKE_USERS = """
from django.contrib.auth import get_user_model
from allocations.models import Project, ProjectMembership
project = Project.objects.get(pk={project})
for i in range({n}):
    user, _ = get_user_model().objects.get_or_create(username=f"nbuser{{i:02d}}")
    user.set_password("demo"); user.save()
    ProjectMembership.objects.get_or_create(project=project, user=user, defaults={{"role": "member"}})
"""


RETRIES = {"n": 0}


def call(method: str, path: str, token: str = "", body: dict | None = None) -> dict:
    """The API call, retried on a refused or reset connection: runserver (what `make run`
    serves with) listens with a backlog of 5, and 40 clients at once overflow it. Counted."""
    for attempt in range(8):
        try:
            return call_once(method, path, token, body)
        except (ConnectionError, OSError) as error:
            if getattr(error, "code", None) is not None or attempt == 7:  # an HTTP answer
                raise
            RETRIES["n"] += 1
            time.sleep(0.2 * 2**attempt)
    raise AssertionError("unreachable")


def wait_http(url: str, timeout: float = 120) -> None:
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2)  # nosec B310 # literal http://127.0.0.1 URL
            return
        except OSError:
            time.sleep(0.5)
    raise SystemExit(f"{url} did not come up")


def one_user(i: int, allocation: int, hub_url: str) -> dict:
    name = f"nbuser{i:02d}"
    token = call("POST", "/auth/token/", body={"username": name, "password": "demo"})["token"]
    t0 = time.monotonic()
    session = call("POST", "/notebooks/", token, {"allocation": allocation, "gpus": 1, "hours": 1})
    row: dict = {"user": name, "session": session.get("id")}
    while time.monotonic() - t0 < 900:
        state = call("GET", f"/notebooks/{session['id']}/", token)
        if state["state"] in ("running", "failed", "stopped"):
            break
        time.sleep(1)
    row["state"] = state["state"]
    if state["state"] != "running":
        row["reason"] = state.get("reason", "")
        return row
    row["to_running_s"] = time.monotonic() - t0
    record = Path(os.environ["BENCH_VAR"], "notebooks", str(session["id"]), "record.json")
    out = run_cell(
        f"{hub_url}/user/{name}/nb-{session['id']}/",
        server_token(record),
        "import os; print(os.getuid())",
    )
    row["to_cell_s"] = time.monotonic() - t0
    row["uid"] = int(out.strip().splitlines()[-1])
    call("POST", f"/notebooks/{session['id']}/stop/", token)
    while time.monotonic() - t0 < 1200:
        state = call("GET", f"/notebooks/{session['id']}/", token)
        if state.get("charged"):
            break
        time.sleep(1)
    row["charged"] = bool(state.get("charged"))
    row["seconds"] = state.get("wall_seconds") or state.get("gpu_seconds")
    return row


def guarded(i: int, allocation: int, hub_url: str) -> dict:
    try:
        return one_user(i, allocation, hub_url)
    except Exception as error:  # noqa: BLE001 (a bench row says what went wrong)
        return {"user": f"nbuser{i:02d}", "state": "error", "reason": repr(error)[:200]}


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))] if ordered else 0.0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--users", type=int, default=int(os.environ.get("BENCH_NOTEBOOK_USERS", "40"))
    )
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("skipped: the members' accounts need root")
        return 0
    var = Path(tempfile.mkdtemp(prefix="bench-nb-users-"))
    var.chmod(0o711)
    os.environ["BENCH_VAR"] = str(var)
    hub_url = f"http://127.0.0.1:{HUB_PORT}"
    env = {
        **embedded_env(var),
        "JUPYTERHUB_URL": hub_url,
        "PORTAL_BASE_URL": f"http://127.0.0.1:{PORT}",
        "JUPYTERHUB_START_TIMEOUT": "900",
    }
    secrets = subprocess.run(
        ["bash", str(ROOT / "scripts/hub-env.sh"), str(var / "hub")],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for line in secrets.splitlines():
        key, _, value = line.removeprefix("export ").partition("=")
        env[key] = value
    py, procs = sys.executable, []

    def run(*args: str) -> None:
        subprocess.run(
            [py, "manage.py", *args],
            cwd=ROOT,
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
            umask=0o077,
        )

    try:
        run("migrate", "--noinput", "-v0")
        run("seed_demo", "--password", "demo")
        run("provider_key")
        run("hub_client")
        logs = {name: open(var / f"{name}.log", "w") for name in ("hub", "worker", "web")}
        for name, argv in (
            (
                "hub",
                [
                    str(Path(py).with_name("jupyterhub")),
                    "-f",
                    str(ROOT / "launcher/notebooks/hub/jupyterhub_config.py"),
                ],
            ),
            (
                "worker",
                [
                    py,
                    "-m",
                    "celery",
                    "-A",
                    "portal",
                    "worker",
                    "-B",
                    "--pool",
                    "solo",
                    "--loglevel",
                    "INFO",
                    "--schedule",
                    str(var / "celerybeat-schedule"),
                ],
            ),
            ("web", [py, "manage.py", "runserver", "--noreload", f"127.0.0.1:{PORT}"]),
        ):
            procs.append(
                subprocess.Popen(
                    argv,
                    cwd=ROOT,
                    env=env,
                    stdout=logs[name],
                    stderr=subprocess.STDOUT,
                    umask=0o077,
                )
            )
        wait_http(f"http://127.0.0.1:{PORT}/")
        wait_http(f"{hub_url}/hub/health")
        token = call("POST", "/auth/token/", body={"username": "researcher", "password": "demo"})[
            "token"
        ]
        allocation = allocation_on(token, "local")
        project = call("GET", f"/allocations/{allocation}/", token)["project"]
        project_id = project["id"] if isinstance(project, dict) else project
        run("shell", "-c", MAKE_USERS.format(project=project_id, n=args.users))
        began = time.monotonic()
        with futures.ThreadPoolExecutor(max_workers=args.users) as pool:
            rows = list(pool.map(lambda i: guarded(i, allocation, hub_url), range(args.users)))
        wall = time.monotonic() - began
        time.sleep(12)  # the supervisors' kill of what the sessions left
        members = {e.pw_uid for e in pwd.getpwall() if e.pw_name.startswith("portal-u")}
        left = subprocess.run(["ps", "-eo", "uid="], capture_output=True, text=True).stdout.split()
        left_running = sum(1 for uid in left if int(uid) in members)
    finally:
        for proc in reversed(procs):
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        if not args.keep:
            shutil.rmtree(var, ignore_errors=True)
    ok = [r for r in rows if "to_cell_s" in r]
    running = [r["to_running_s"] for r in ok]
    cells = [r["to_cell_s"] for r in ok]
    print(
        f"{args.users} users open a notebook on `local` at once, run a cell, stop "
        f"({os.cpu_count()} CPU cores, {dt.date.today()}; beat: notebooks sync every 15 s)"
    )
    print(f"(API calls retried after a refused or reset connection: {RETRIES['n']})")
    print(
        f"{'sessions':>8} {'running':>8} {'open->running p50/p95 s':>24} "
        f"{'open->cell p50/p95 s':>21} {'uids':>5} {'charged':>8} {'left':>5} {'wall s':>7}"
    )
    print(
        f"{len(rows):>8} {len(ok):>8} {statistics.median(running) if running else 0:>11.1f}"
        f"/{pct(running, 0.95):<12.1f} {statistics.median(cells) if cells else 0:>9.1f}"
        f"/{pct(cells, 0.95):<11.1f} {len({r['uid'] for r in ok}):>5} "
        f"{sum(1 for r in ok if r.get('charged')):>8} {left_running:>5} {wall:>7.0f}"
    )
    for r in rows:
        if "to_cell_s" not in r:
            print(f"  {r['user']}: {r.get('state')} {r.get('reason', '')}")
    print(
        json.dumps({"rows": rows}),
        file=open(ROOT / "bench" / "out" / "notebook_users.json", "w")
        if (ROOT / "bench" / "out").is_dir()
        else open(os.devnull, "w"),
    )
    good = len(ok) == args.users and left_running == 0 and all(r.get("charged") for r in ok)
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
