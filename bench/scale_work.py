"""The centre world's work: jobs (a fifth of them sweep cells, with the parameters a launch
stores), their sweeps, five usage records a job that ran, notebook sessions, and an event for
each request, allocation, sweep and job. Written by COPY (bench/scale_rows.py) into the world
bench/scale_world.py builds."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from decimal import Decimal

from bench.scale_rows import World, _next_id, _when, copy_rows

TERMINAL = ["succeeded"] * 80 + ["failed"] * 10 + ["cancelled"] * 7 + ["timeout"] * 3


def _jobs_sweeps_usage(world: World) -> int:
    """Jobs, their sweeps, and five usage records a job (each a slice of its run)."""
    from psycopg.types.json import Jsonb

    from allocations.models import UsageRecord
    from launcher import sweepgrid
    from launcher.models import Job, Sweep
    from launcher.params import DEFAULT_JOB, DEFAULT_SWEEP_GRID, DEFAULT_SWEEP_PARAMS

    rng = world.rng
    researcher = world.demo["researcher"]  # type: ignore[attr-defined]
    # What a launch stores: the default job's parameters with its seed (a cell: its fold too).
    params = [Jsonb({**DEFAULT_JOB, "seed": 0, "fold": fold}) for fold in range(3)]
    spec = {**DEFAULT_SWEEP_GRID, "folds": world.sizes["sweep_size"] // 2}  # 2 lrs x 10 folds
    cells = [
        Jsonb({**DEFAULT_SWEEP_PARAMS, **{k: v for k, v in cell.items() if k != "index"}})
        for cell in sweepgrid.expand(sweepgrid.validate(spec))  # as sweep_launch stores them
    ]
    grid, sweep_params = Jsonb(spec), Jsonb(DEFAULT_SWEEP_PARAMS)
    rates = {fid: rate or Decimal(0) for fid, _nt, rate in world.facilities}
    mine = [a for a in world.allocations if researcher in world.members[a[1]]]
    jfirst, sfirst = _next_id(Job), _next_id(Sweep)
    jobs, sweeps = [], []
    sweep_id, sweep_left, sweep_alloc = 0, 0, world.allocations[0]
    for i in range(world.sizes["jobs"]):
        if i < world.sizes["researcher_jobs"]:
            alloc, user = mine[i % len(mine)], researcher
        else:
            alloc = world.allocations[rng.randrange(len(world.allocations))]
            user = rng.choice(world.members[alloc[1]])
        cell = None
        if i % world.sizes["sweep_share"] == 0 and i >= world.sizes["researcher_jobs"]:
            if not sweep_left:
                sweep_id = sfirst + len(sweeps)
                sweep_left, sweep_alloc = world.sizes["sweep_size"], alloc
                sweeps.append(
                    (
                        sweep_id,
                        alloc[0],
                        user,
                        f"sweep {len(sweeps)}",
                        world.sizes["sweep_size"],
                        f"sweep-{sweep_id}",
                        _when(rng, alloc[3], alloc[4]),
                        grid,
                        sweep_params,
                    )
                )
            alloc = sweep_alloc
            cell = (sweep_id, world.sizes["sweep_size"] - sweep_left)
            sweep_left -= 1
        aid, _pid, fid, start, end = alloc
        created = _when(rng, start, end)
        began = created + dt.timedelta(seconds=rng.randrange(5, 3600))
        run, gpus, state = (
            rng.randrange(60, 8 * 3600),
            rng.choice([1, 1, 1, 2, 4, 8]),
            rng.choice(TERMINAL),
        )
        if state == "cancelled" and rng.random() < 0.5:
            started, finished, gpu_seconds = None, began, 0
        else:
            started, finished, gpu_seconds = began, began + dt.timedelta(seconds=run), run * gpus
        jobs.append(
            (
                jfirst + i,
                aid,
                cell[0] if cell else None,
                user,
                "ct",
                gpus,
                120,
                state,
                f"job-{jfirst + i}",
                f"{900000 + i}",
                cell[1] if cell else None,
                gpu_seconds,
                created,
                created,
                started,
                finished,
                cells[cell[1]] if cell else params[i % 3],
                rates[fid],
            )
        )
    # In the order the portal writes them, oldest first, the ids rising with time: the jobs
    # of a month lie together in the table, as the live month the reports read does in service.
    jobs.sort(key=lambda job: job[12])
    for k, job in enumerate(jobs):
        jobs[k] = (jfirst + k, *job[1:8], f"job-{jfirst + k}", *job[9:])
    n = copy_rows(
        Sweep,
        ["allocation_id", "created_by_id", "name", "size", "token", "created_at", "grid", "params"],
        sweeps,
    )
    n += copy_rows(
        Job,
        [
            "allocation_id",
            "sweep_id",
            "created_by_id",
            "workload",
            "gpus",
            "wall_time_minutes",
            "state",
            "token",
            "scheduler_id",
            "array_index",
            "gpu_seconds",
            "created_at",
            "submitted_at",
            "started_at",
            "finished_at",
            "params",
        ],
        (job[:-1] for job in jobs),
    )
    world.job_range = (jfirst, jfirst + len(jobs))  # type: ignore[attr-defined]
    per_job = world.sizes["usage"] // world.sizes["jobs"]
    ufirst = _next_id(UsageRecord)
    cent = Decimal("0.0001")

    def usage() -> Iterator[tuple]:
        uid = ufirst
        for job in jobs:
            jid, aid, gpu_seconds, began, finished, rate = (
                job[0],
                job[1],
                job[11],
                job[14],
                job[15],
                job[17],
            )
            if not gpu_seconds:
                continue
            run, part = (finished - began).total_seconds(), gpu_seconds // per_job
            cost = (rate * part / 3600).quantize(cent)
            for k in range(per_job):
                yield (
                    uid,
                    aid,
                    "slurm",
                    f"{job[9]}.{k}",
                    began + dt.timedelta(seconds=k * run / per_job),
                    began + dt.timedelta(seconds=(k + 1) * run / per_job),
                    part,
                    part,
                    cost,
                    jid,
                )
                uid += 1

    return n + copy_rows(
        UsageRecord,
        [
            "allocation_id",
            "source",
            "external_id",
            "period_start",
            "period_end",
            "gpu_seconds",
            "cpu_seconds",
            "cost",
            "job_id",
        ],
        usage(),
    )


def _notebooks(world: World) -> int:
    from launcher.notebooks.models import NotebookSession

    rng, first = world.rng, _next_id(NotebookSession)

    def rows() -> Iterator[tuple]:
        for i in range(world.sizes["notebooks"]):
            aid, pid, _fid, start, end = world.allocations[rng.randrange(len(world.allocations))]
            began = _when(rng, start, end)
            wall = rng.randrange(600, 4 * 3600)
            yield (
                first + i,
                aid,
                rng.choice(world.members[pid]),
                1,
                Decimal(2),
                "charged",
                wall,
                wall,
                began,
                began,
                began + dt.timedelta(seconds=wall),
                began,
            )

    return copy_rows(
        NotebookSession,
        [
            "allocation_id",
            "user_id",
            "gpus",
            "hours",
            "state",
            "gpu_seconds",
            "wall_seconds",
            "created_at",
            "started_at",
            "stopped_at",
            "charged_at",
        ],
        rows(),
    )


def _events(world: World) -> int:
    """An event per request and allocation (approved, active), per sweep and per job (queued)."""
    from django.contrib.contenttypes.models import ContentType

    from allocations.models import Allocation, AllocationRequest, Event
    from launcher.models import Job, Sweep

    first = _next_id(Event)
    # Read before the COPY starts: the connection cannot query while a COPY is open.
    sources = [
        (
            ContentType.objects.get_for_model(model).pk,
            state,
            list(model.objects.order_by("pk").values_list("pk", "created_at")),
        )
        for model, state in (
            (AllocationRequest, "approved"),
            (Allocation, "active"),
            (Sweep, "queued"),
            (Job, "queued"),
        )
    ]

    def rows() -> Iterator[tuple]:
        eid = first
        for ct, state, objects in sources:
            for pk, created in objects:
                yield (eid, ct, pk, state, created)
                eid += 1

    return copy_rows(Event, ["content_type_id", "object_id", "to_state", "created_at"], rows())
