"""Which project files two paths cross, measured rather than read (docs/architecture.md, "Two
paths, file by file"): a job launch from POST /api/v1/jobs/ to `sbatch` on the real Slurm of
`make services`, and a trial request from POST /api/v1/requests/ to an active Slurm account.

Not part of the suite (no `test_` prefix); run it by name, under the Slurm lock:

    flock /tmp/slurm.lock .venv/bin/pytest -q -s tests/launcher/trace_paths.py

A profile hook records every project file in which a function is called, in first-call order,
while the path runs with Celery eager (the enqueued task runs in-process after the commit).
Counted as docs/architecture.md counts: not models, migrations, apps.py, Django
or libraries, nor the middleware, authentication and error handling every request crosses
(printed apart, as "every request")."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest
from celery import current_app
from django.utils import timezone

from allocations.models import Allocation, ProjectMembership
from launcher.models import Job
from launcher.provisioning import allocation_provision
from tests.launcher.slurm_fixtures import (  # noqa: F401
    drop_account,
    drop_workdirs,
    make_allocation,
    slurm_facility,
)
from tests.launcher.slurm_members import member_logins

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]
EVERY_REQUEST = (
    "portal/security.py",
    "portal/errors.py",
    "portal/context_processors.py",
    "portal/tokens/",
    "portal/apiconf.py",
    "allocations/roles.py",
    "core/bounds.py",
)
# Branches off the path, printed apart: the emails a submission sends (their task runs eagerly
# here), and the receivers of `allocation_status_changed`, which run once the account is active.
SIDE = {
    ("allocations/tasks.py", "send_notification"),
    ("launcher/receivers.py", None),
    ("launcher/cloud/receivers.py", None),
}


def _counted(path: str) -> bool:
    name = Path(path).name
    return not (
        name in {"models.py", "apps.py", "__init__.py"}
        or "/models/" in path
        or "/migrations/" in path
    )


def _rel(name: str) -> str | None:
    if name.startswith(str(ROOT)) and "/.venv/" not in name and "/tests/" not in name:
        return str(Path(name).relative_to(ROOT))
    return None


def _on_side_branch(frame) -> bool:
    while frame is not None:
        rel = _rel(frame.f_code.co_filename)
        if rel and ((rel, None) in SIDE or (rel, frame.f_code.co_name) in SIDE):
            return True
        frame = frame.f_back
    return False


def trace(run) -> tuple[list[str], list[str], list[str]]:
    seen: list[str] = []
    side: list[str] = []
    funcs: dict[str, list[str]] = {}

    def hook(frame, event, arg):
        if event == "call" and frame.f_code.co_name != "<module>":  # not a first import
            rel = _rel(frame.f_code.co_filename)
            if rel and not _on_side_branch(frame):
                names = funcs.setdefault(rel, [])
                if frame.f_code.co_name not in names:
                    names.append(frame.f_code.co_name)
            if rel and rel not in seen:
                if _on_side_branch(frame):
                    if rel not in side:
                        side.append(rel)
                else:
                    seen.append(rel)

    current_app.conf.task_always_eager = True
    sys.setprofile(hook)
    threading.setprofile(hook)
    try:
        run()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
        current_app.conf.task_always_eager = False
    kept = [f for f in seen if _counted(f)]
    if os.environ.get("TRACE_FUNCTIONS"):
        for name in kept:
            print(f"    {name}: {', '.join(funcs.get(name, []))}")
    return (
        [f for f in kept if not f.startswith(EVERY_REQUEST)],
        [f for f in kept if f.startswith(EVERY_REQUEST)],
        [f for f in side if _counted(f) and f not in seen],
    )


def _print(title: str, files: tuple[list[str], list[str], list[str]]) -> None:
    path, every, side = files
    print(f"\n{title}: {len(path)} files")
    for i, name in enumerate(path, 1):
        print(f"  {i:2}. {name}")
    print(f"  (every request: {', '.join(every)})")
    print(f"  (side branches only: {', '.join(side) or 'none'})")


def test_trace_a_job_launch_to_sbatch(
    api,
    researcher,
    project,
    slurm_facility,  # noqa: F811
    services_env,
):
    # The job runs as the researcher's own cluster login (a member login of the test cluster),
    # never as the service account.
    ProjectMembership.objects.filter(user=researcher).update(
        cluster_username=member_logins(services_env)[0]
    )
    allocation = make_allocation(project, slurm_facility, status="provisioning")
    allocation_provision(allocation_id=allocation.pk)
    client = api.as_user(researcher)
    client.get("/api/v1/jobs/")  # warm the per-process caches (content types, the SSH connection)
    try:
        responses = []
        files = trace(
            lambda: responses.append(
                client.post(
                    "/api/v1/jobs/",
                    {"allocation": allocation.pk, "params": {"epochs": 1}},
                    format="json",
                )
            )
        )
        assert responses[0].status_code == 201, responses[0].json()
        job = Job.objects.get()
        assert job.scheduler_id, (job.state, job.state_reason)  # sbatch ran
        _print("A job launch, POST /api/v1/jobs/ to sbatch", files)
    finally:
        allocation.refresh_from_db()
        drop_account(slurm_facility, allocation.account_name)
        drop_workdirs(slurm_facility, allocation)


def test_trace_a_trial_approval_to_an_active_account(
    api, researcher, project, slurm_facility, services_env
):  # noqa: F811
    ProjectMembership.objects.filter(user=researcher).update(
        cluster_username=member_logins(services_env)[0]
    )
    client = api.as_user(researcher)
    client.get("/api/v1/requests/")
    today = timezone.localdate()
    files = trace(
        lambda: client.post(
            "/api/v1/requests/",
            {
                "project": project.pk,
                "facility": slurm_facility.slug,
                "kind": "trial",
                "purpose": "new",
                "gpu_hours": 10,
                "cpu_hours": 0,
                "start_date": today.isoformat(),
                "end_date": (today + timezone.timedelta(days=30)).isoformat(),
                "data_sensitivity": "public",
                "justification": "Trying the cluster out.",
                "submit": True,
            },
            format="json",
        )
    )
    allocation = Allocation.objects.get(project=project)
    try:
        assert allocation.status == "active", allocation.status_reason
        _print("A trial approval, POST /api/v1/requests/ to an active Slurm account", files)
    finally:
        drop_account(slurm_facility, allocation.account_name)
