"""The Slurm entry's `notebook` capability: what the hub's SlurmNotebookSpawner needs to start a
session (`notebook_options`), and the session's charge from sacct (`notebook_usage`).

The session runs as a Slurm job named `portal-nb-<session id>-<token>` under the allocation's
account, as the owner's cluster login (launcher/notebooks/hub/slurm.py submits it with sudo as
that login; never as the service account); sacct is the record: elapsed seconds x the
GPUs Slurm allocated (AllocTRES gres/gpu), summed over the session's jobs (one, unless a start
was retried). Reads only (SSH), like every other entry operation."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.utils import timezone

from allocations.models import Allocation, ProjectMembership

from ..backends.contract import (
    BackendError,
    NotebookUsage,
    PathRefused,
    check_cluster_username,
    project_folder,
)
from ..notebooks.selectors import notebook_datasets
from .client import NOTEBOOK_JOB_PREFIX, SlurmClient
from .parse import NamedJob

if TYPE_CHECKING:
    from launcher.notebooks.models import NotebookSession

# Why a session's job ended, in the words the portal shows.
_ENDED = {
    "COMPLETED": "exited",
    "CANCELLED": "stopped",
    "TIMEOUT": "time limit",
    "DEADLINE": "time limit",
    "FAILED": "failed",
    "NODE_FAIL": "node failed",
    "OUT_OF_MEMORY": "out of memory",
    "PREEMPTED": "preempted",
    "BOOT_FAIL": "failed",
}


def member_login(allocation: Allocation, user_id: int) -> str:
    """The session owner's cluster login in the project: the session runs as it. A permanent
    BackendError when there is none (or none Slurm takes): never the service account instead."""
    login = (
        ProjectMembership.objects.filter(project_id=allocation.project_id, user_id=user_id)
        .values_list("cluster_username", flat=True)
        .first()
    ) or ""
    if not login:
        raise BackendError(
            "you have no cluster login in this project: a PI or manager sets it on the "
            "project's members page (a notebook runs as your own login on the cluster)",
            permanent=True,
        )
    return check_cluster_username(login)


def notebook_options(
    allocation: Allocation,
    session: NotebookSession,
    resolve: Callable[[str], str],
    conf: dict[str, Any],
) -> dict[str, Any]:
    """The spawner's backend_options (JSON): SSH facts, cluster, account, partition, the
    owner's login, workdir/run_dir/datasets on the cluster, the compute-side python and env.
    `conf` is the facility's Slurm settings (backend.slurm_settings).

    The workdir is `<project storage>/notebooks/<login>`, which the job makes itself as the
    member (project storage is the project's, writable by its members); with no project
    storage it is a folder beside the jobs that the service account makes and shares with the
    member alone (`make_workdir`)."""
    if not allocation.account_name:
        raise BackendError("the allocation has no Slurm account yet", permanent=True)
    login = member_login(allocation, session.user_id)
    make_workdir = False
    try:
        project_dir = project_folder(conf, allocation.project.code)
        workdir = f"{project_dir}/notebooks/{login}"
        datasets, left_out = notebook_datasets(allocation=allocation, resolve=resolve)
    except PathRefused:  # no project storage: a private folder beside the jobs, no datasets
        workdir = f"{conf['jobs_dir']}/notebooks/{allocation.project.code}/{login}"
        datasets, left_out = {}, {}
        make_workdir = True
    env = {str(k): str(v) for k, v in (conf.get("notebook_env") or {}).items()}
    if conf.get("python_path"):
        env.setdefault("PYTHONPATH", str(conf["python_path"]))
    return {
        "ssh": {
            "host": conf["host"],
            "port": int(conf["port"]),
            "user": conf["user"],
            "key_path": str(conf["key_path"]),
            "host_key": str(conf["host_key"]),
            "connect_timeout": float(conf.get("connect_timeout", 10)),
            "retries": int(conf.get("retries", 2)),
        },
        "cluster": conf["cluster"],
        "account": allocation.account_name,
        "partition": conf.get("partition") or "",
        "login": login,
        "workdir": workdir,
        "make_workdir": make_workdir,
        "jobs_dir": conf["jobs_dir"],
        "run_dir": f"{conf['jobs_dir']}/notebooks/nb-{session.pk}",
        "datasets": datasets,
        "datasets_left_out": left_out,
        "python": str(conf.get("notebook_python") or conf["python"]),
        "env": env,
        "readonly_datasets": conf.get("notebook_readonly_datasets", True) is not False,
    }


def _aware(value: dt.datetime) -> dt.datetime:
    return timezone.make_aware(value) if timezone.is_naive(value) else value


def usage_from_jobs(jobs: list[NamedJob]) -> NotebookUsage | None:
    """The session's usage from its jobs' sacct rows (pure): None while there is no job, or
    its only jobs still wait in the queue; a job cancelled while pending counts 0 seconds."""
    if not jobs:
        return None
    last = max(jobs, key=lambda j: int(j.job_id) if j.job_id.isdigit() else 0)
    ended = None
    if all(j.end is not None for j in jobs):
        ended = _aware(max(j.end for j in jobs if j.end is not None))
    starts = [j.start for j in jobs if j.start is not None]
    if not starts and ended is None:
        return None
    if last.state == "PENDING":
        reason = f"waiting: {last.reason or 'queued'}"
    elif last.end is None:
        reason = ""
    else:
        reason = _ENDED.get(last.state, last.state.lower())
    first = _aware(min(starts)) if starts else ended
    assert first is not None  # ended is set when nothing started
    return NotebookUsage(
        started=first,
        ended=ended,
        gpu_seconds=sum(j.gpu_seconds for j in jobs),
        wall_seconds=sum(j.elapsed_seconds for j in jobs),
        external_id=",".join(sorted((j.job_id for j in jobs), key=lambda i: (len(i), i))),
        reason=reason,
    )


def notebook_usage(session: NotebookSession, client: SlurmClient) -> NotebookUsage | None:
    """sacct's record of the session's jobs (portal-nb-<id>-*) on the allocation's account,
    read with the facility's client (backend.slurm_client)."""
    allocation = session.allocation
    if not allocation.account_name:
        return None
    since = timezone.localtime(session.created_at - dt.timedelta(minutes=5)).replace(tzinfo=None)
    jobs = client.jobs_named(
        account=allocation.account_name, prefix=f"{NOTEBOOK_JOB_PREFIX}{session.pk}-", since=since
    )
    return usage_from_jobs(jobs)
