"""Part 1 of bench_throughput.py: launches per second through the production shape, on the
Slurm cluster of `make services`, with none overspent.

The world (once): a Slurm facility on the real cluster (set up as tests/launcher/
slurm_fixtures.py sets theirs up), N projects (100), each with one researcher as a member whose
cluster login is one of the cluster's member logins (SLURM_MEMBERS: slurm-alice, slurm-bob),
PEOPLE researchers in all, each with a personal API token (`token_create`).

For each W: N fresh allocations, one a project (the first W's provisioned by
`allocation_provision`, which creates their Slurm accounts over SSH; later ones activated on
those accounts, the same caps and members), every fourth with a tight grant
(room for 3 launches and a half) and the others with room for every launch of the period. W
gunicorn workers and a Celery worker of W processes start; the partition goes DOWN; CLIENTS
threads POST `jobs/` (1 GPU x 60 min: 1 GPU-hour reserved each) round the allocations for
WARMUP + SECONDS; then the worker stops (warm), its queue is emptied, every job of the bench's
accounts is cancelled and the partition is put back as it was. Figures count what completed in
the SECONDS after the warm-up; submissions are the jobs whose `submitted_at` falls there.
"""

from __future__ import annotations

import datetime as dt
import os
import statistics
import sys
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import requests
import throughput_procs as procs
import throughput_slurm as slurm

LAUNCH = {"gpus": 1, "wall_time_minutes": 60}  # the ledger reserves 1 GPU-hour (wall x GPUs)
TIGHT_HOURS = Decimal("3.5")  # 3 launches fit, the 4th is refused for lack of hours
ROOMY_HOURS = Decimal("2000")
TIGHT_EVERY = 4


@dataclass
class World:
    facility: Any
    partition: str
    projects: list[Any]
    keys: list[str]  # the API token of each project's researcher
    accounts: list[str]  # the Slurm account of each project's allocations
    tight: frozenset[int]
    made: dict[int, list[int]] = field(default_factory=dict)  # W -> its allocation ids


def _logins(services: dict[str, str]) -> list[str]:
    logins = [m for m in services.get("SLURM_MEMBERS", "").split(",") if m]
    logins = [m for m in logins if m != services["SSH_USER"]]
    if not logins:
        raise RuntimeError("services.env names no SLURM_MEMBERS: run `make services` first")
    return logins


def world_build(services: dict[str, str], *, n: int, people: int) -> World:
    from django.contrib.auth import get_user_model

    from allocations.models import Facility, Project, ProjectMembership
    from portal.tokens.services import token_create

    py = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    facility = Facility.objects.create(
        slug="bench-throughput",
        name="Bench throughput (Slurm)",
        kind="hpc",
        backend="slurm",
        gpu_hour_rate=Decimal("0.50"),
        backend_settings={
            "host": services["SSH_HOST"],
            "port": int(services["SSH_PORT"]),
            "user": services["SSH_USER"],
            "key_path": services["SSH_KEY_PATH"],
            "host_key": services["SSH_KNOWN_HOSTS"],
            "cluster": services["SLURM_CLUSTER"],
            "partition": services["SLURM_PARTITION"],
            "python": f"/usr/bin/{py}",
            "python_path": str(Path(sys.prefix) / "lib" / py / "site-packages"),
        },
    )
    users = get_user_model().objects
    pi = users.create(username="bench-pi")
    people_made = [users.create(username=f"bench-r{k:02d}") for k in range(people)]
    keys = {p.pk: token_create(user=p, name="bench throughput", days=7)[1] for p in people_made}
    logins, run = _logins(services), uuid.uuid4().hex[:6]
    projects, project_keys = [], []
    for i in range(n):
        person = people_made[i % people]
        project = Project.objects.create(code=f"BTH-PUT-{i:03d}", title=f"Throughput {i}", pi=pi)
        ProjectMembership.objects.create(
            project=project, user=person, role="member", cluster_username=logins[i % len(logins)]
        )
        projects.append(project)
        project_keys.append(keys[person.pk])
    return World(
        facility=facility,
        partition=services["SLURM_PARTITION"],
        projects=projects,
        keys=project_keys,
        accounts=[f"bthr{run}-{i:03d}" for i in range(n)],
        tight=frozenset(range(0, n, TIGHT_EVERY)),
    )


def allocations_make(world: World, w: int) -> tuple[list[int], float]:
    """Fresh allocations for this W, each on its project's Slurm account; their ids and the
    seconds it took. The first W's are provisioned over SSH (`allocation_provision` creates
    the capped accounts with their members); later ones find those accounts made, with the
    same caps and members, and are activated on them (`allocation_activate`)."""
    from django.utils import timezone

    from allocations.models import Allocation
    from allocations.services import allocation_activate
    from launcher.provisioning import allocation_provision

    today = timezone.localdate()
    made = [
        Allocation.objects.create(
            project=project,
            facility=world.facility,
            gpu_hours=TIGHT_HOURS if i in world.tight else ROOMY_HOURS,
            start_date=today,
            end_date=today + dt.timedelta(days=30),
            status="provisioning",
            account_name=world.accounts[i],
        )
        for i, project in enumerate(world.projects)
    ]
    t0 = time.perf_counter()
    if world.made:
        done = [allocation_activate(allocation=a) for a in made]
    else:
        # One at a time, as one provisioning task does: four at once on one slurmdbd made
        # `sacctmgr add user` find an account just added missing (a permanent failure).
        done = [allocation_provision(allocation_id=a.pk) for a in made]
    took = time.perf_counter() - t0
    failed = [a for a in done if a is None or a.status != "active"]
    if failed:
        raise RuntimeError(f"{len(failed)} allocations not active: {failed[0].status_reason}")
    world.made[w] = [a.pk for a in made]
    return world.made[w], took


def drive(
    base: str, targets: list[tuple[int, str]], *, clients: int, warmup: float, seconds: float
):
    """CLIENTS threads POST jobs/ round the targets for warmup + seconds; returns every answer
    as (time done, status, latency) and the measured window."""
    url, stop, lock = f"{base}/api/v1/jobs/", threading.Event(), threading.Lock()
    answers: list[tuple[float, int, float]] = []

    def client(k: int) -> None:
        # Each client goes round every allocation in turn, from its own starting point.
        session, mine, i = requests.Session(), [], k * len(targets) // clients
        while not stop.is_set():
            allocation, key = targets[i % len(targets)]
            i += 1
            t0 = time.time()
            try:
                status = session.post(
                    url,
                    json={"allocation": allocation, **LAUNCH},
                    headers={"Authorization": f"Token {key}"},
                    timeout=120,
                ).status_code
            except requests.RequestException:
                status = 0
            done = time.time()
            mine.append((done, status, done - t0))
        with lock:
            answers.extend(mine)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    start = time.time()
    for thread in threads:
        thread.start()
    time.sleep(warmup + seconds)
    stop.set()
    for thread in threads:
        thread.join()
    return answers, start + warmup, start + warmup + seconds


def _ledger_checks(ids: list[int]) -> dict[str, int]:
    """Allocations overspent (charged + reserved > granted) by the ledger's columns
    (`allocation_ledger`, what a launch reads) and by the records recomputed; columns that
    drifted from the records."""
    from allocations.ledger import Figures, ledger_recomputed, ledger_stored
    from allocations.models import Allocation
    from allocations.selectors import allocation_ledger

    over = 0
    for pk in ids:
        ledger = allocation_ledger(pk)
        if ledger.gpu_seconds_used + ledger.gpu_seconds_reserved > ledger.gpu_seconds_granted:
            over += 1
    granted = dict(Allocation.objects.filter(pk__in=ids).values_list("pk", "gpu_hours"))
    recomputed, stored = ledger_recomputed(allocation_ids=ids), ledger_stored(allocation_ids=ids)
    over_records = sum(
        1
        for pk, fig in recomputed.items()
        if fig.gpu_seconds_used + fig.gpu_seconds_reserved > granted[pk] * 3600
    )
    drift = sum(1 for pk in ids if stored[pk] != recomputed.get(pk, Figures()))
    return {"overspent": over, "overspent_records": over_records, "drift": drift}


def figures(world: World, w: int, answers, t0: float, t1: float) -> dict[str, Any]:
    from django.db.models import Count

    from launcher.models import Job

    ids, seconds = world.made[w], t1 - t0
    window = Counter(status for done, status, _ in answers if t0 <= done < t1)
    every = Counter(status for _, status, _ in answers)
    latency = sorted(lat for done, status, lat in answers if status == 201 and t0 <= done < t1)
    jobs = Job.objects.filter(allocation_id__in=ids)
    utc = dt.UTC
    since, until = dt.datetime.fromtimestamp(t0, tz=utc), dt.datetime.fromtimestamp(t1, tz=utc)
    per = dict(jobs.values_list("allocation_id").annotate(n=Count("pk")))
    room = int(TIGHT_HOURS // (Decimal(LAUNCH["gpus"] * LAUNCH["wall_time_minutes"]) / 60))
    tight_ids = [world.made[w][i] for i in sorted(world.tight)]
    return {
        "w": w,
        "allocations": len(ids),
        "seconds": seconds,
        "accepted_s": window[201] / seconds,
        "refused_s": window[409] / seconds,
        "p50_ms": statistics.median(latency) * 1000 if latency else float("nan"),
        "5xx": sum(n for status, n in every.items() if status >= 500),
        "unanswered": every[0],
        "other_4xx": sum(n for s, n in every.items() if s not in (0, 201, 409) and s < 500),
        "submitted_s": jobs.filter(submitted_at__gte=since, submitted_at__lt=until).count()
        / seconds,
        "submitted": jobs.exclude(submitted_at=None).count(),
        "failed": jobs.filter(state="failed").count(),
        "queued_left": jobs.filter(state="queued").count(),
        "answers_201": every[201],
        "jobs": sum(per.values()),
        "tight_full": sum(1 for pk in tight_ids if per.get(pk, 0) == room),
        "tight": len(tight_ids),
        **_ledger_checks(ids),
    }


def phase(world: World, w: int, *, env, redis_url, clients, warmup, seconds) -> dict[str, Any]:
    """One W: allocations, the servers, the partition DOWN, the clients, then the clean-up."""
    ids, provisioned = allocations_make(world, w)
    load = os.getloadavg()[0]
    targets = [(pk, world.keys[i]) for i, pk in enumerate(ids)]
    cancelled: list[int] = []
    procs.flush_redis(redis_url)  # the provisioning's notifications: not this bench's work
    with procs.gunicorn(w, env) as base, procs.celery_worker(w, env) as worker:

        def before_up() -> None:
            worker.stop()  # nothing is submitted after this
            procs.flush_redis(redis_url)
            cancelled.append(slurm.cancel_jobs(world.accounts))

        with slurm.partition_down(world.partition, before_up=before_up):
            answers, t0, t1 = drive(base, targets, clients=clients, warmup=warmup, seconds=seconds)
    return {
        **figures(world, w, answers, t0, t1),
        "provision_s": provisioned,
        "load": load,
        "cancelled": cancelled[0] if cancelled else 0,
    }


def run(
    services: dict[str, str],
    *,
    env: dict[str, str],
    redis_url: str,
    workers: list[int],
    n: int,
    people: int,
    clients: int,
    warmup: float,
    seconds: float,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every W in turn under the Slurm lock; returns the rows and the cluster before/after."""
    import logging

    from django.db import connections

    from launcher.models import Job
    from launcher.slurm import backend as slurm_backend

    logging.getLogger("paramiko").setLevel(logging.WARNING)
    world = world_build(services, n=n, people=people)
    rows: list[dict[str, Any]] = []
    removed = 0
    with slurm.cluster_lock():
        before = slurm.snapshot(world.partition, world.accounts)
        try:
            for w in workers:
                rows.append(
                    phase(
                        world,
                        w,
                        env=env,
                        redis_url=redis_url,
                        clients=clients,
                        warmup=warmup,
                        seconds=seconds,
                    )
                )
                print(_line(rows[-1]), flush=True)
        finally:
            slurm.cancel_jobs(world.accounts)  # nothing of ours may start once it is UP
            client = slurm_backend.slurm_client(world.facility)
            tokens = set(Job.objects.values_list("token", flat=True))
            jobs_dir = slurm_backend.slurm_settings(world.facility)["jobs_dir"]
            removed = slurm.remove_staged(client.ssh, jobs_dir, tokens)
            client.ssh.close()
            slurm.delete_accounts(world.accounts)
            connections.close_all()
        after = slurm.snapshot(world.partition, world.accounts)
    return rows, {"before": before, "after": after, "folders_removed": removed}


def _line(row: dict[str, Any]) -> str:
    return (
        f"W={row['w']}: {row['accepted_s']:.1f} accepted/s, {row['refused_s']:.1f} refused/s, "
        f"{row['submitted_s']:.2f} submitted/s, {row['5xx']} 5xx, {row['overspent']} overspent "
        f"(provisioned in {row['provision_s']:.1f} s, {row['cancelled']} Slurm jobs cancelled)"
    )
