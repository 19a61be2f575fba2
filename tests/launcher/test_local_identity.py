"""Members' jobs on the `local` backend run as the member, never as the portal
(launcher/local/identity.py, contain.py, supervisor.py; docs/security.md "Users' code"): their
own uid and the project's group, no portal secret in the environment, the portal's records out of
their reach, and a charge that survives the job's folder being deleted."""

from __future__ import annotations

import grp
import math
import os
import pwd
import shutil
import subprocess
import sys

import pytest

from allocations.models import UsageRecord
from launcher import services
from launcher.local import cells, identity
from launcher.local.contain import RunAs
from launcher.local.supervisor import ledger_path
from tests.launcher.local_fixtures import (  # noqa: F401  (fixtures)
    LONG,
    cell_of,
    jobs_dir,
    launch,
    local_allocation,
    local_facility,
    poll_until,
    training_started,
)
from tests.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def proc_ids(pid: int) -> tuple[int, int, set[int]]:
    """(real uid, real gid, supplementary groups) of a live process."""
    fields = dict(line.split(":", 1) for line in open(f"/proc/{pid}/status").read().splitlines())
    return (
        int(fields["Uid"].split()[0]),
        int(fields["Gid"].split()[0]),
        {int(g) for g in fields["Groups"].split()},
    )


def proc_env(pid: int) -> dict[str, str]:
    raw = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


def running(allocation, user):
    job = launch(allocation, user, LONG)
    services.job_submit(job_id=job.pk)
    job = poll_until(job, {"running"})
    wait_for(lambda: training_started(job), timeout=300, what="the first training step")
    return job


def as_member(run_as: RunAs, code: str) -> subprocess.CompletedProcess:
    """Run Python `code` as the member would (the same identity, a clean environment)."""
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin"},
        check=False,
        **run_as.popen_kwargs(),
    )


def test_a_members_job_runs_under_their_own_uid_with_the_projects_group_and_no_secret(
    local_allocation, researcher, pi
):
    job = running(local_allocation, researcher)
    trainer = cells.read_json(cell_of(job) / cells.PID)["child_pid"]

    uid, gid, groups = proc_ids(trainer)
    account = pwd.getpwnam(identity.account_name(researcher.pk))
    project_group = grp.getgrnam(identity.group_name(local_allocation.project_id))
    assert (uid, gid) == (account.pw_uid, account.pw_gid) and uid not in (0, os.geteuid())
    assert groups == {project_group.gr_gid}
    env = proc_env(trainer)
    assert os.environ["SECRET_KEY"] and os.environ["DATABASE_URL"]  # the portal has them...
    allowed = {
        "PATH",
        "LANG",
        "LC_ALL",
        "LC_CTYPE",
        "TZ",
        "OPENBLAS_CORETYPE",
        "OPENBLAS_L2_SIZE",
        "USER",
        "LOGNAME",
        "HOME",
        "PYTHONPATH",
        "PYTHONUNBUFFERED",
        "CUDA_VISIBLE_DEVICES",
    }
    assert set(env) <= allowed, set(env) - allowed  # ...the job has none of them
    assert env["CUDA_VISIBLE_DEVICES"] in ("0", "1")  # one of the facility's two slots
    assert env["USER"] == account.pw_name and env["HOME"] == str(
        identity.homes_dir() / account.pw_name
    )
    # Another member of the same project gets an account of their own.
    other = identity.run_as_for(
        facility=local_allocation.facility, user=pi, project_id=local_allocation.project_id
    )
    assert other.uid != uid and other.groups == (project_group.gr_gid,)
    services.job_cancel(by=researcher, job=job)


def test_the_member_cannot_touch_the_portals_records_of_its_job(
    local_allocation, researcher, settings
):
    job = running(local_allocation, researcher)
    cell = cell_of(job)
    run_as = identity.run_as_for(
        facility=local_allocation.facility, user=researcher, project_id=local_allocation.project_id
    )
    attack = as_member(
        run_as,
        f"""
import os, shutil, sys
cell = {str(cell)!r}
results = []
for what, act in [
    ("delete the cell", lambda: shutil.rmtree(cell)),
    ("write exit.json", lambda: open(os.path.join(cell, "exit.json"), "w").write("{{}}")),
    ("replace pid.json", lambda: os.replace(os.path.join(cell, "out"), os.path.join(cell, "pid.json"))),
    ("read the ledger", lambda: os.listdir({str(ledger_path(cell).parent)!r})),
    ("list the jobs", lambda: os.listdir({str(cell.parent.parent)!r})),
]:
    try:
        act()
        results.append(what + ": done")
    except PermissionError:
        results.append(what + ": refused")
print("\\n".join(results))
""",
    )
    assert attack.returncode == 0, attack.stderr
    assert attack.stdout.split("\n")[:5] == [
        "delete the cell: refused",
        "write exit.json: refused",
        "replace pid.json: refused",
        "read the ledger: refused",
        "list the jobs: refused",
    ]
    assert (cell / cells.PID).is_file() and not (cell / cells.EXIT).exists()
    # Its own results folder is its own: the trainer writes there.
    assert (cell / "out" / "progress.json").stat().st_uid == run_as.uid
    services.job_cancel(by=researcher, job=job)


def test_a_job_whose_folder_is_deleted_mid_run_is_charged_what_it_ran(local_allocation, researcher):
    job = running(local_allocation, researcher)
    cell = cell_of(job)
    supervisor = cells.read_json(cell / cells.PID)["pid"]
    # The whole job folder, records included, gone at once (as root, or a disk clean-up, could).
    trash = cell.parent.with_name("trash")
    cell.parent.rename(trash)
    shutil.rmtree(trash, ignore_errors=True)

    job = poll_until(job, {"failed"})
    assert "folder was deleted" in job.state_reason
    record = cells.read_json(ledger_path(cell))
    assert record["exit"] and record["elapsed_seconds"] > 0
    services.usage_ingest(allocation=local_allocation)  # what the beat's ingest does
    charge = UsageRecord.objects.get(allocation=local_allocation, job_id=job.pk)
    assert charge.gpu_seconds >= 1 and charge.detail["folder_gone"] is True
    assert charge.gpu_seconds == math.ceil(record["elapsed_seconds"])
    wait_for(
        lambda: not os.path.exists(f"/proc/{supervisor}"),
        timeout=60,
        what="the supervisor of the deleted job to end",
    )


def test_without_the_right_to_switch_notebooks_are_refused_and_jobs_run_as_the_portal(
    local_allocation, researcher, settings, api
):
    settings.LOCAL_RUN_AS_MEMBERS = "no"
    assert (
        identity.run_as_for(
            facility=local_allocation.facility,
            user=researcher,
            project_id=local_allocation.project_id,
        )
        is None
    )
    response = api.as_user(researcher).post(
        "/api/v1/notebooks/",
        {"allocation": local_allocation.pk, "gpus": 1, "hours": 1},
        format="json",
    )
    assert response.status_code == 409, response.content
    assert "run as the portal itself" in response.json()["detail"]


def test_notebooks_and_jobs_hold_the_facilitys_gpus_exclusively(local_allocation, researcher):
    """Two 1-GPU sessions on a 2-slot facility see different GPUs, a third is refused, and a
    job waits for a slot while both hold theirs."""
    from launcher.backends.contract import BackendError
    from launcher.backends.registry import backend_for
    from launcher.models import Job
    from launcher.notebooks.models import NotebookSession

    backend = backend_for(local_allocation.facility)
    sessions = [
        NotebookSession.objects.create(
            allocation=local_allocation, user=researcher, gpus=1, hours=1
        )
        for _ in range(3)
    ]
    seen = [
        backend.notebook_options(allocation=local_allocation, session=s)["cuda_visible_devices"]
        for s in sessions[:2]
    ]
    assert sorted(seen) == ["0", "1"]
    # Asked again (a retried spawn), a session keeps what it holds.
    assert (
        backend.notebook_options(allocation=local_allocation, session=sessions[0])[
            "cuda_visible_devices"
        ]
        == seen[0]
    )
    with pytest.raises(BackendError, match="GPUs are in use"):
        backend.notebook_options(allocation=local_allocation, session=sessions[2])
    job = launch(local_allocation, researcher, LONG)
    services.job_submit(job_id=job.pk)
    job.refresh_from_db()
    assert job.state == Job.State.PENDING and "2 of 2 in use" in job.state_reason
    # One session ends: its GPU goes to the job.
    NotebookSession.objects.filter(pk=sessions[1].pk).update(state=NotebookSession.State.STOPPED)
    job = poll_until(job, {"running"})
    trainer = wait_for(
        lambda: (cells.read_json(cell_of(job) / cells.PID) or {}).get("child_pid"),
        what="the trainer's pid",
    )
    assert proc_env(trainer)["CUDA_VISIBLE_DEVICES"] == seen[1]
    services.job_cancel(by=researcher, job=job)
