"""Notebook sessions on the real Slurm of `make services` (issue 24), through a real JupyterHub
whose spawner is SlurmNotebookSpawner and the Slurm entry's notebook capability:

- a session is a Slurm job under the allocation's account with its GPUs, run as the member's
  cluster login (squeue's and sacct's user; issue 34), JupyterLab answers, the project's dataset
  is linked in its folder, and Slurm stops it at its hours;
- a member whose login the cluster's sudo refuses is refused before the hub is asked, with
  that reason;
- a session waiting for GPUs says why (Slurm's reason, in the server's state and the progress
  stream) and is cancelled while pending: the job is gone and nothing is charged;
- an idle session is stopped (jupyterhub-idle-culler with a short timeout);
- the charge (`notebook_usage`) is sacct's elapsed seconds x the GPUs Slurm allocated.
"""

from __future__ import annotations

import json
import subprocess
import urllib.request
from decimal import Decimal

import pytest

from allocations.models import Dataset
from launcher.backends.contract import BackendError
from launcher.backends.registry import backend_for
from launcher.notebooks.models import NotebookSession
from launcher.slurm import backend as slurm_backend
from tests.factories import FacilityFactory
from tests.launcher.conftest import read_services_env, unique_name
from tests.launcher.slurm_fixtures import make_allocation, slurm_settings
from tests.launcher.slurm_members import as_member, job_user, member_logins
from tests.notebooks.slurm_hub import Hub, cluster_notebook_env
from tests.waiting import wait_for

pytestmark = pytest.mark.django_db
# The hub's one spawner class, which hands "backend": "slurm" servers to SlurmNotebookSpawner.
SPAWNER = "launcher.notebooks.hub.spawner.PortalSpawner"
ONE_MINUTE = 1 / 60  # hours: Slurm's --time=1


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    hub = Hub(tmp_path_factory.mktemp("hub"), spawner=SPAWNER)
    yield hub
    hub.close()


@pytest.fixture(scope="module")
def idle_hub(tmp_path_factory):
    """A hub whose idle culler stops a server idle for 10 seconds."""
    hub = Hub(tmp_path_factory.mktemp("idle-hub"), spawner=SPAWNER, idle_timeout=10)
    yield hub
    hub.close()


@pytest.fixture(scope="module")
def services_env():
    return read_services_env()


@pytest.fixture
def facility(db, services_env):
    """A Slurm facility whose project storage is a fresh folder on the cluster."""
    root = unique_name("portal-test-nb-")
    facility = FacilityFactory(
        slug=unique_name("slurm-nb-"),
        backend="slurm",
        backend_settings=slurm_settings(
            services_env, storage_root=root, notebook_env=cluster_notebook_env()
        ),
    )
    yield facility
    client = slurm_backend.slurm_client(facility)
    client.ssh.run(["rm", "-rf", "--", root])
    slurm_backend.forget(facility.pk)


@pytest.fixture
def allocation(project, researcher, facility, services_env):
    """An active allocation with its own Slurm account (the cluster's two member logins as its
    users; the researcher's login is the first) and a dataset on the cluster. The project's
    storage is writable by its members (as a site's project group makes it; here ACLs)."""
    client = slurm_backend.slurm_client(facility)
    allocation = make_allocation(project, facility, status="active")
    logins = member_logins(services_env)
    client.ensure_account(name=allocation.account_name, users=logins, gpu_minutes=600)
    root = facility.backend_settings["storage_root"]
    assert client.ssh.run(["mkdir", "-p", f"{root}/{project.code}/ct/v1"]).ok()
    grant = ",".join(
        [f"u:{login}:rwx" for login in logins]
        + [f"d:u:{login}:rwx" for login in logins]
        + [f"d:u:{client.ssh.target.user}:rwx"]
    )
    assert client.ssh.run(["setfacl", "-R", "-m", grant, "--", root]).ok()
    Dataset.objects.create(
        project=project, name="ct", location="ct/v1", modality="ct", sensitivity="public"
    )
    project.memberships.filter(user=researcher).update(cluster_username=logins[0])
    yield allocation
    client.ssh.run(["scancel", f"--account={allocation.account_name}"])
    run_dirs = [
        f"portal-jobs/notebooks/nb-{pk}"
        for pk in NotebookSession.objects.filter(allocation=allocation).values_list("pk", flat=True)
    ]
    if run_dirs:  # the sessions' env.sh, script, endpoint and Slurm log
        client.ssh.run(["rm", "-rf", "--", *run_dirs])
    client.ssh.run(["sacctmgr", "-i", "delete", "account", f"name={allocation.account_name}"])


def start(hub, allocation, user, *, gpus: int, hours: float) -> NotebookSession:
    """What the portal does: a session row, the entry's options, the hub's POST."""
    session = NotebookSession.objects.create(
        allocation=allocation, user=user, gpus=gpus, hours=Decimal(str(round(hours, 2)))
    )
    session.server_name = f"nb-{session.pk}"
    session.save()
    options = backend_for(allocation.facility).notebook_options(
        allocation=allocation, session=session
    )
    hub.api("POST", f"/users/{user.username}")  # the portal creates the hub user on a 404
    status, body = hub.api(
        "POST",
        f"/users/{user.username}/servers/{session.server_name}",
        {
            "session": session.pk,
            "backend": "slurm",
            "gpus": gpus,
            "hours": hours,
            "workdir": options["workdir"],
            "datasets": options["datasets"],
            "run_dir": options["run_dir"],
            "backend_options": options,
        },
    )
    assert status in (201, 202), (status, body, hub.log())
    return session


def server(hub, session):
    """The session's server as the hub's API shows it, with `job` = the Slurm spawner's state
    (PortalSpawner keeps it as `child_state`)."""
    found = hub.server(session.user.username, session.server_name)
    if found is not None:
        found["job"] = (found.get("state") or {}).get("child_state") or {}
    return found


def sacct(allocation, job_id: str) -> dict[str, str]:
    out = (
        slurm_backend.slurm_client(allocation.facility)
        .ssh.run(
            ["sacct", "-n", "-P", "-X", "-j", job_id, "-o", "State,ElapsedRaw,AllocTRES,Account"]
        )
        .stdout
    )
    state, elapsed, tres, account = out.strip().splitlines()[0].split("|")
    return {"state": state.split(" ")[0], "elapsed": elapsed, "tres": tres, "account": account}


def squeue(allocation, job_id: str) -> str:
    return (
        slurm_backend.slurm_client(allocation.facility)
        .ssh.run(["squeue", "-h", "-j", job_id, "-o", "%a|%b|%T|%j"])
        .stdout.strip()
    )


MOUNTS = r"""
for pid in $(pgrep -u "$3" -f jupyterhub.singleuser); do
  tr '\0' '\n' < /proc/$pid/environ | grep -qx "SLURM_JOB_ID=$1" || continue
  grep -F -- "/$2 " /proc/$pid/mountinfo
done
"""


def server_mount(job_id: str, where: str, login: str) -> str:
    """The mountinfo line of `workdir/<where>` as the job's notebook server (running as the
    member `login` on this machine, the test cluster's node) sees it; read as root here."""
    return subprocess.run(
        ["bash", "-c", MOUNTS, "mounts", job_id, where, login], capture_output=True, text=True
    ).stdout.strip()


def test_a_session_is_a_slurm_job_on_the_account_and_stops_at_its_hours(
    hub, allocation, researcher
):
    session = start(hub, allocation, researcher, gpus=1, hours=ONE_MINUTE)
    ready = wait_for(
        lambda: (s := server(hub, session)) and s["ready"] and s,
        timeout=180,
        what="the notebook to be ready",
    )
    job_id = ready["job"]["job_id"]

    account, gres, state, name = squeue(allocation, job_id).split("|")
    assert (account, state) == (allocation.account_name, "RUNNING")
    assert gres.endswith("gpu:1") and name.startswith(f"portal-nb-{session.pk}-")
    assert ready["job"]["devices"] in ("0", "1")  # Slurm's CUDA_VISIBLE_DEVICES for 1 GPU
    # The member's own login runs it, in squeue and in sacct: never the service account.
    login = allocation.project.memberships.get(user=researcher).cluster_username
    client = slurm_backend.slurm_client(allocation.facility)
    assert login != client.ssh.target.user
    assert wait_for(
        lambda: all(u := job_user(client, job_id)) and u, what="sacct's record of the session"
    ) == (login, login)

    token = hub.user_token(researcher.username)
    lab = f"{hub.url}/user/{researcher.username}/{session.server_name}/lab"
    assert wait_for(
        lambda: hub.request("GET", lab, token=token)[0] == 200,
        timeout=60,
        what="JupyterLab to answer",
    )
    mount = server_mount(job_id, "datasets/ct", login)
    assert mount.split()[5].split(",")[0] == "ro"  # the dataset: a read-only bind mount
    assert mount.split()[3].endswith(f"/{allocation.project.code}/ct/v1")

    # Slurm ends it at --time=1; the hub's poll sees it gone.
    wait_for(
        lambda: not (s := server(hub, session)) or not (s["ready"] or s["pending"]),
        timeout=240,
        what="Slurm to stop the session at its hours",
    )
    record = wait_for(
        lambda: (r := sacct(allocation, job_id))["state"] == "TIMEOUT" and r,
        timeout=60,
        what="sacct's TIMEOUT record",
    )
    assert record["account"] == allocation.account_name and "gres/gpu=1" in record["tres"]

    usage = backend_for(allocation.facility).notebook_usage(session=session)
    assert usage is not None and usage.ended is not None
    assert usage.external_id == job_id and usage.reason == "time limit"
    assert usage.wall_seconds == int(record["elapsed"]) >= 60
    assert usage.gpu_seconds == int(record["elapsed"]) * 1


def progress_messages(hub, session, *, until: str) -> list[str]:
    """The spawn's progress stream (server-sent events) up to a message containing `until`."""
    url = f"{hub.url}/hub/api/users/{session.user.username}/servers/{session.server_name}/progress"
    request = urllib.request.Request(url, headers={"Authorization": f"token {hub.token}"})
    messages: list[str] = []
    with urllib.request.urlopen(request, timeout=60) as stream:
        for raw in stream:
            line = raw.decode().strip()
            if line.startswith("data:"):
                messages.append(json.loads(line[5:]).get("message", ""))
                if until in messages[-1]:
                    break
    return messages


def test_a_pending_session_says_why_and_is_cancelled_with_nothing_charged(
    hub, allocation, researcher
):
    client = slurm_backend.slurm_client(allocation.facility)
    other = member_logins(read_services_env())[1]  # another member's job holds both GPUs
    blocker = as_member(
        client,
        other,
        [
            "sbatch",
            "--parsable",
            f"--account={allocation.account_name}",
            "--gres=gpu:2",
            "--time=5",
            "--job-name=portal-test-blocker",
            "--output=/dev/null",
            "--wrap=sleep 300",
        ],
    ).stdout.strip()
    try:
        wait_for(
            lambda: squeue(allocation, blocker).endswith("RUNNING|portal-test-blocker"),
            timeout=60,
            what="the blocker to hold both GPUs",
        )
        session = start(hub, allocation, researcher, gpus=1, hours=1)

        waiting = wait_for(
            lambda: (
                (s := server(hub, session))
                and s["pending"] == "spawn"
                and s["job"].get("job_state") == "PENDING"
                and s["job"].get("reason")
                and s
            ),
            timeout=60,
            what="the session to wait in the queue",
        )
        assert waiting["job"]["reason"] in ("Resources", "Priority")
        said = f"Waiting in the Slurm queue: {waiting['job']['reason']}"
        assert progress_messages(hub, session, until=said)[-1] == said
        job_id = waiting["job"]["job_id"]

        status, _ = hub.api("DELETE", f"/users/{researcher.username}/servers/{session.server_name}")
        assert status in (202, 204)
        wait_for(
            lambda: not (s := server(hub, session)) or not (s["ready"] or s["pending"]),
            timeout=60,
            what="the hub to drop the pending server",
        )
        assert "PENDING" not in squeue(allocation, job_id)
        record = wait_for(
            lambda: (r := sacct(allocation, job_id))["state"] == "CANCELLED" and r,
            timeout=60,
            what="sacct's CANCELLED record",
        )
        assert record["elapsed"] == "0"

        usage = backend_for(allocation.facility).notebook_usage(session=session)
        assert usage is not None
        assert (usage.gpu_seconds, usage.wall_seconds, usage.reason) == (0, 0, "stopped")
        assert usage.external_id == job_id
    finally:
        client.cancel(blocker)


def test_an_idle_session_is_stopped_and_charged_its_elapsed_time_times_its_gpus(
    idle_hub, allocation, researcher
):
    session = start(idle_hub, allocation, researcher, gpus=2, hours=1)
    ready = wait_for(
        lambda: (s := server(idle_hub, session)) and s["ready"] and s,
        timeout=180,
        what="the notebook to be ready",
    )
    job_id = ready["job"]["job_id"]
    assert ready["job"]["devices"] == "0,1"

    # Nobody uses it: the culler stops it (DELETE -> scancel) well before its hour.
    wait_for(
        lambda: not (s := server(idle_hub, session)) or not (s["ready"] or s["pending"]),
        timeout=120,
        what="the idle culler to stop the session",
    )
    record = wait_for(
        lambda: (r := sacct(allocation, job_id))["state"] == "CANCELLED" and r,
        timeout=60,
        what="sacct's CANCELLED record",
    )
    assert "gres/gpu=2" in record["tres"] and int(record["elapsed"]) < 3600

    backend = backend_for(allocation.facility)
    usage = backend.notebook_usage(session=session)
    assert usage is not None and usage.reason == "stopped"
    # Charged once, per session: the account's usage ingestion leaves the notebook's job out.
    assert job_id not in {r.detail["job_id"] for r in backend.usage(allocation=allocation)}
    assert usage.gpu_seconds == int(record["elapsed"]) * 2
    assert usage.wall_seconds == int(record["elapsed"])


@pytest.mark.parametrize("login", ["root", "nosuch-member"])
def test_a_member_whose_login_sudo_refuses_gets_no_session_and_is_told_why(
    allocation, researcher, login
):
    allocation.project.memberships.filter(user=researcher).update(cluster_username=login)
    session = NotebookSession.objects.create(
        allocation=allocation, user=researcher, gpus=0, hours=Decimal("1")
    )

    with pytest.raises(BackendError) as refused:
        backend_for(allocation.facility).notebook_options(allocation=allocation, session=session)

    assert refused.value.permanent
    assert f"sudo refused to run sbatch as {login}" in refused.value.message
    assert "nothing runs as the service account" in refused.value.message


def test_a_member_without_a_cluster_login_gets_no_session(allocation, researcher):
    allocation.project.memberships.filter(user=researcher).update(cluster_username="")
    session = NotebookSession.objects.create(
        allocation=allocation, user=researcher, gpus=0, hours=Decimal("1")
    )

    with pytest.raises(BackendError) as refused:
        backend_for(allocation.facility).notebook_options(allocation=allocation, session=session)

    assert refused.value.permanent and "no cluster login" in refused.value.message
