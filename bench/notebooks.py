"""Benchmark: "Open a notebook" to a JupyterLab page that answers, on the local backend and on
the idle Slurm cluster of `make services` (issue 24; aims: <= 5 s local, <= 15 s Slurm).

For each backend, a real JupyterHub (pinned 6.1.1, configurable-http-proxy, the backend's
spawner: LocalNotebookSpawner when the hub package has it, else JupyterHub's own
SimpleLocalProcessSpawner; SlurmNotebookSpawner over SSH) is started once, then REPEATS times:
the portal's call (`POST /hub/api/users/<name>/servers/nb-<n>` with the session's user_options)
-> poll `GET /user/<name>/nb-<n>/lab` with the user's own hub token until it answers 200. Also
read: JupyterHub's own spawn timer (the histogram `jupyterhub_server_spawn_duration_seconds` at
/hub/metrics, read with a token that has read:metrics; each spawn's value is the change of its
`_sum`) and, on Slurm, the queue wait (sacct Start - Submit). Sessions are stopped between runs.

The Slurm part holds /tmp/slurm.lock (the tests' lock) so it runs on an idle cluster; it makes
its own Slurm account, with the cluster's first member login (SLURM_MEMBERS in services.env:
slurm-alice) as its user, and removes it. The session runs as that member's login
(`backend_options["login"]`: sudo -n -u <login> sbatch), never as the service account (SSH_USER),
which the spawner refuses; its workdir is a folder beside the jobs that the service account
makes and shares with the member (`make_workdir`, as without project storage), and the bench
checks that sacct's user of each job is the member. No database. Run: python bench/notebooks.py
"""

from __future__ import annotations

import datetime as dt
import fcntl
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from launcher.slurm.client import SlurmClient  # noqa: E402
from launcher.slurm.ssh import SSHConnection, SSHTarget  # noqa: E402
from tests.notebooks.slurm_hub import Hub, cluster_notebook_env  # noqa: E402

REPEATS = int(os.environ.get("BENCH_NOTEBOOK_REPEATS", "3"))
SERVICES_ENV = (
    Path(os.environ.get("PORTAL_SERVICES_DIR", "/var/lib/portal-services")) / "services.env"
)
USER = "bench-researcher"
AIMS = {"local": 5.0, "slurm": 15.0}
SLURM_LOCK = Path(tempfile.gettempdir()) / "slurm.lock"  # the lock Slurm tests run under by hand


def local_spawner() -> str:
    try:
        from launcher.notebooks.hub.local import LocalNotebookSpawner  # noqa: F401
    except ImportError:
        return "jupyterhub.spawner.SimpleLocalProcessSpawner"
    return "launcher.notebooks.hub.local.LocalNotebookSpawner"


def services_env() -> dict[str, str]:
    pairs = (line.split("=", 1) for line in SERVICES_ENV.read_text().splitlines() if "=" in line)
    return {k.strip(): v.strip() for k, v in pairs}


def member_login(env: dict[str, str]) -> str:
    """The member login the Slurm session runs as: the first of SLURM_MEMBERS."""
    logins = [m.strip() for m in env.get("SLURM_MEMBERS", "").split(",") if m.strip()]
    if not logins or logins[0] == env["SSH_USER"]:
        raise RuntimeError(
            f"{SERVICES_ENV} names no member login (SLURM_MEMBERS) other than the "
            "service account: run `make services` first"
        )
    return logins[0]


def spawn_sum(hub: Hub) -> float:
    """`jupyterhub_server_spawn_duration_seconds_sum{..., status="success"}` from /hub/metrics."""
    status, text = hub.request("GET", f"{hub.url}/hub/metrics", token=hub.token)
    if status != 200:
        raise RuntimeError(f"/hub/metrics answered {status}")
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in str(text).splitlines()
        if line.startswith("jupyterhub_server_spawn_duration_seconds_sum{")
        and 'status="success"' in line
    )


def wait(check, *, timeout: float, what: str):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.05)


def job_state(hub: Hub, server: str) -> dict:
    state = (hub.server(USER, server) or {}).get("state") or {}
    return state.get("child_state") or state


def one_spawn(
    hub: Hub, token: str, server: str, options: dict
) -> tuple[float, float, dict, float | None]:
    """(seconds from the POST to a 200 from JupyterLab, the hub's spawn timer for it, the
    server's (backend spawner's) state, seconds from the POST until a Slurm job ran and said
    where its server listens (None on other backends))."""
    before = spawn_sum(hub)
    lab = f"{hub.url}/user/{USER}/{server}/lab"
    slurm = options["backend"] == "slurm"
    answer: list[tuple[int, object]] = []
    t0 = time.perf_counter()
    # The hub answers the POST only when the server is ready or after its slow_spawn_timeout
    # (10 s): send it from a thread and watch the server's state meanwhile.
    post = threading.Thread(
        target=lambda: answer.append(hub.api("POST", f"/users/{USER}/servers/{server}", options))
    )
    post.start()
    located = None
    if slurm:
        wait(lambda: job_state(hub, server).get("node"), timeout=300, what="the job to run")
        located = time.perf_counter() - t0
    post.join()
    if answer[0][0] not in (201, 202):
        raise RuntimeError(f"start refused: {answer[0]}\n{hub.log()}")
    wait(
        lambda: hub.request("GET", lab, token=token, timeout=10)[0] == 200,
        timeout=300,
        what=f"{lab} to answer",
    )
    elapsed = time.perf_counter() - t0
    state = job_state(hub, server)
    timer = spawn_sum(hub) - before
    hub.api("DELETE", f"/users/{USER}/servers/{server}")
    wait(
        lambda: not ((s := hub.server(USER, server)) and (s["ready"] or s["pending"])),
        timeout=120,
        what="the server to stop",
    )
    return elapsed, timer, state, located


def run_local(folder: Path) -> tuple[list[float], list[float]]:
    singleuser = Path(sys.executable).with_name("jupyterhub-singleuser")
    extra = f"c.Spawner.cmd = [{str(singleuser)!r}]\n"
    if os.geteuid() == 0:  # this VM runs everything as root; Jupyter refuses root without it
        extra += "c.Spawner.args = ['--allow-root']\n"
    hub = Hub(folder / "hub-local", spawner=local_spawner(), extra=extra)
    try:
        token = hub.user_token(USER)
        totals, timers = [], []
        for n in range(REPEATS):
            work = folder / f"local-{n}"
            (work / "run").mkdir(parents=True)
            options = {
                "session": n + 1,
                "backend": "local",
                "gpus": 0,
                "hours": 1,
                "workdir": str(work),
                "run_dir": str(work / "run"),
                "datasets": {},
                "backend_options": {"cuda_visible_devices": ""},
            }
            total, timer, _, _ = one_spawn(hub, token, f"nb-{n + 1}", options)
            totals.append(total)
            timers.append(timer)
        return totals, timers
    finally:
        hub.close()


def run_slurm(folder: Path) -> tuple[list[float], list[float], list[float], list[float]]:
    env = services_env()
    target = SSHTarget(
        host=env["SSH_HOST"],
        port=int(env["SSH_PORT"]),
        user=env["SSH_USER"],
        key_path=Path(env["SSH_KEY_PATH"]),
        host_key=env["SSH_KNOWN_HOSTS"],
    )
    client = SlurmClient(
        SSHConnection(target), cluster=env["SLURM_CLUSTER"], partition=env["SLURM_PARTITION"]
    )
    login = member_login(env)
    account = f"bench-nb-{uuid.uuid4().hex[:8]}"
    client.ensure_account(name=account, users=[login], gpu_minutes=600)
    client.check_member(login)  # sudo lets the service account run sbatch and tail as it
    py = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    backend_options = {
        "ssh": {
            "host": target.host,
            "port": target.port,
            "user": target.user,
            "key_path": str(target.key_path),
            "host_key": target.host_key,
        },
        "cluster": env["SLURM_CLUSTER"],
        "account": account,
        "partition": env["SLURM_PARTITION"],
        "login": login,
        "jobs_dir": "portal-jobs",
        "workdir": f"portal-jobs/notebooks/{account}/{login}",
        "make_workdir": True,
        "datasets": {},
        "python": f"/usr/bin/{py}",
        "env": {
            "PYTHONPATH": str(Path(sys.prefix) / "lib" / py / "site-packages"),
            **cluster_notebook_env(),
        },
    }
    hub = Hub(folder / "hub-slurm", spawner="launcher.notebooks.hub.slurm.SlurmNotebookSpawner")
    try:
        token = hub.user_token(USER)
        totals, timers, waits, located = [], [], [], []
        for n in range(REPEATS):
            options = {
                "session": 900_000 + n,
                "backend": "slurm",
                "gpus": 1,
                "hours": 1,
                "backend_options": {
                    **backend_options,
                    "run_dir": f"portal-jobs/notebooks/{account}/nb-{n}",
                },
            }
            total, timer, state, where = one_spawn(hub, token, f"nb-{n + 1}", options)
            totals.append(total)
            timers.append(timer)
            waits.append(queue_wait(client, state["job_id"], login))
            located.append(where if where is not None else total)
        return totals, timers, waits, located
    finally:
        hub.close()
        client.ssh.run(["scancel", f"--account={account}"])
        client.ssh.run(["sacctmgr", "-i", "delete", "account", f"name={account}"])
        client.ssh.run(["rm", "-rf", "--", f"portal-jobs/notebooks/{account}"])
        client.ssh.close()


def queue_wait(client: SlurmClient, job_id: str, login: str) -> float:
    """sacct's Start - Submit of the job; the job must have run as the member `login`."""
    out = client.ssh.run(
        ["sacct", "-n", "-P", "-X", "-a", "-j", job_id, "-o", "Submit,Start,User"]
    ).stdout
    submit, start, user = out.strip().splitlines()[0].split("|")
    if user != login:
        raise RuntimeError(f"job {job_id} ran as {user!r}, not as the member {login!r}")
    return (dt.datetime.fromisoformat(start) - dt.datetime.fromisoformat(submit)).total_seconds()


def main() -> int:
    import logging

    logging.getLogger("paramiko").setLevel(logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="bench-notebooks-") as tmp:
        folder = Path(tmp)
        local, local_timer = run_local(folder)
        with open(SLURM_LOCK, "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # an idle cluster: no Slurm test runs meanwhile
            slurm, slurm_timer, waits, located = run_slurm(folder)
    slurm_login = member_login(services_env())
    med = statistics.median
    print(f"{'what':46} {'median':>8} {'max':>8} {'aim':>8}   {'hub spawn timer':>15}")
    for name, totals, timers in (("local", local, local_timer), ("slurm", slurm, slurm_timer)):
        what = f"{name}: start -> JupyterLab answers 200"
        print(
            f"{what:46} {med(totals):7.2f}s {max(totals):7.2f}s {'<= ' + str(int(AIMS[name])) + ' s':>8}"
            f"   {med(timers):14.2f}s"
        )
    print(
        f"{'slurm: start -> the job RUNNING (squeue)':46} {med(located):7.2f}s {max(located):7.2f}s"
    )
    print(
        f"{'slurm: of which the queue (sacct Start-Submit)':46} {med(waits):7.2f}s {max(waits):7.2f}s"
    )
    print(
        f"{'slurm: then JupyterLab starting on the node':46} "  # and the proxy route
        f"{med(t - w for t, w in zip(slurm, located)):7.2f}s"
    )
    print(
        f"(medians of {REPEATS}; the Slurm sessions ran as the member login {slurm_login}; local spawner: {local_spawner().rsplit('.', 1)[1]}; the hub's "
        "timer is jupyterhub_server_spawn_duration_seconds: POST -> the server answers the hub)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
