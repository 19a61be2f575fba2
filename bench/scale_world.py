"""A national centre's world, generated reproducibly into PostgreSQL with COPY.

10,000 users, 3,000 projects with members, 20 facilities, 12,000 requests and allocations over
three years, 1,000,000 jobs (a fifth of them sweep cells), 50,000 notebook sessions, 5,000,000
usage records and an event for each request, allocation, sweep and job. The demo world
(`seed_demo`: users admin, pi, researcher and reviewer, the catalogue) comes first, so the portal
serves the result as it is: the PI leads 20 projects, the researcher has 5,000 jobs.

Rows are written with PostgreSQL's COPY through Django's connection; the columns a row does not
give take their model default (computed once per table). Everything derives from one seed
(`random.Random(SEED)`), and times from a fixed "now" (NOW), so two builds are the same rows.
Then the ledger's columns and rollups are rebuilt from the records (`ledger_rebuild`), the
sequences moved past the ids written, and the tables analysed.

    python bench/scale_world.py [FACTOR]   # into $DATABASE_URL (migrated and seeded); FACTOR
                                           # scales every count (default 1; 0.01: demo scale)

`bench/bench_scale.py` calls `build()` on a database named portal_scale.
"""

from __future__ import annotations

import datetime as dt
import random
import time
from collections.abc import Iterable, Iterator, Sequence
from decimal import Decimal
from typing import Any

SEED = 36
NOW = dt.datetime(2026, 11, 1, 12, 0, tzinfo=dt.UTC)
SIZES = {
    "users": 10_000,
    "projects": 3_000,
    "facilities": 20,
    "allocations": 12_000,
    "jobs": 1_000_000,
    "sweep_share": 5,  # one job in five is a sweep cell
    "sweep_size": 20,
    "notebooks": 50_000,
    "usage": 5_000_000,
    "pi_projects": 20,
    "researcher_jobs": 5_000,
}
TERMINAL = ["succeeded"] * 80 + ["failed"] * 10 + ["cancelled"] * 7 + ["timeout"] * 3


def _defaults(model, given: Sequence[str]) -> tuple[list[str], list[Any]]:
    """The columns of `model` not in `given` (bar the id) and the value each takes."""
    from django.db.models import JSONField
    from psycopg.types.json import Jsonb

    columns, values = [], []
    for field in model._meta.concrete_fields:
        if field.attname in given or field.primary_key:
            continue
        if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):
            value: Any = NOW
        else:
            value = field.get_default()
        if isinstance(field, JSONField) and value is not None:
            value = Jsonb(value)
        columns.append(field.column)
        values.append(value)
    return columns, values


def copy_rows(model, given: Sequence[str], rows: Iterable[Sequence[Any]]) -> int:
    """COPY rows of (id, *given) into the model's table, the other columns at their default."""
    from django.db import connection
    from psycopg import sql

    columns, values = _defaults(model, given)
    names = ["id", *[model._meta.get_field(name).column for name in given], *columns]
    statement = sql.SQL("COPY {} ({}) FROM STDIN").format(
        sql.Identifier(model._meta.db_table), sql.SQL(", ").join(map(sql.Identifier, names))
    )
    tail = tuple(values)
    n = 0
    with connection.cursor() as cursor, cursor.cursor.copy(statement) as copy:
        for row in rows:
            copy.write_row((*row, *tail))
            n += 1
    return n


def _next_id(model) -> int:
    from django.db.models import Max

    return (model.objects.aggregate(m=Max("pk"))["m"] or 0) + 1


def _when(rng: random.Random, start: dt.datetime, end: dt.datetime) -> dt.datetime:
    span = max(1, int((end - start).total_seconds()))
    return start + dt.timedelta(seconds=rng.randrange(span))


class World:
    """The ids written, kept for the next table's foreign keys."""

    def __init__(self, seed: int = SEED, factor: float = 1.0) -> None:
        self.rng = random.Random(seed)
        # `factor` scales every count (0.01: the demo-scale world of bench_scale.py); the PI's
        # 20 projects stay 20.
        self.sizes = {
            k: v if k in ("sweep_share", "sweep_size", "pi_projects") else max(1, int(v * factor))
            for k, v in SIZES.items()
        }
        self.sizes["usage"] = self.sizes["jobs"] * (SIZES["usage"] // SIZES["jobs"])
        self.users: list[int] = []
        self.projects: list[tuple[int, int]] = []  # (project id, pi id)
        self.members: dict[int, list[int]] = {}
        self.facilities: list[tuple[int, int | None, Decimal]] = []  # (id, node type, rate)
        self.allocations: list[tuple[int, int, int, dt.datetime, dt.datetime]] = []
        self.timings: dict[str, float] = {}
        self.counts: dict[str, int] = {}

    def timed(self, name: str, fn) -> None:
        started = time.perf_counter()
        self.counts[name] = fn()
        self.timings[name] = time.perf_counter() - started


def _users(world: World) -> int:
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import make_password

    User = get_user_model()
    demo = dict(User.objects.values_list("username", "pk"))
    world.demo = demo  # type: ignore[attr-defined]
    first = _next_id(User)
    password = make_password("demo")
    n = world.sizes["users"] - len(demo)
    rows = (
        (
            first + i,
            f"user{i:05d}",
            f"user{i:05d}@centre.example.org",
            password,
            "User",
            f"{i:05d}",
            NOW - dt.timedelta(days=1100),
            True,
        )
        for i in range(n)
    )
    written = copy_rows(
        User,
        ["username", "email", "password", "first_name", "last_name", "date_joined", "is_active"],
        rows,
    )
    world.users = list(range(first, first + n))
    return written


def _facilities(world: World) -> int:
    from allocations.models import Facility, NodeType

    template = Facility.objects.get(slug="baskerville")
    node = NodeType.objects.filter(facility=template).first()
    for i in range(world.sizes["facilities"] - Facility.objects.count()):
        facility = Facility.objects.create(
            slug=f"centre-{i:02d}",
            name=f"Centre cluster {i:02d}",
            kind=template.kind,
            backend=template.backend,
            backend_settings=template.backend_settings,
            gpu_hour_rate=template.gpu_hour_rate,
        )
        if node is not None:
            NodeType.objects.create(
                facility=facility,
                name=node.name,
                accelerator=node.accelerator,
                accelerator_memory_gb=node.accelerator_memory_gb,
                accelerators_per_node=node.accelerators_per_node,
                cpu_cores=node.cpu_cores,
                memory_gb=node.memory_gb,
                device=node.device,
            )
    for facility in Facility.objects.order_by("pk"):
        nt = facility.node_types.order_by("pk").first()
        world.facilities.append((facility.pk, nt.pk if nt else None, facility.gpu_hour_rate))
    return len(world.facilities)


def _projects(world: World) -> int:
    from allocations.models import Project, ProjectMembership

    rng, first = world.rng, _next_id(Project)
    pi = world.demo["pi"]  # type: ignore[attr-defined]
    researcher = world.demo["researcher"]  # type: ignore[attr-defined]
    n = world.sizes["projects"]
    pis = [pi if i < world.sizes["pi_projects"] else rng.choice(world.users) for i in range(n)]
    rows = (
        (
            first + i,
            f"C{i:05d}",
            f"Centre project {i:05d}",
            "Medical imaging",
            pis[i],
            f"PI of C{i:05d}",
            "pi@centre.example.org",
            NOW - dt.timedelta(days=1095 - i % 1000),
        )
        for i in range(n)
    )
    copy_rows(
        Project,
        ["code", "title", "research_area", "pi_id", "pi_name", "pi_email", "created_at"],
        rows,
    )
    world.projects = [(first + i, pis[i]) for i in range(n)]
    member_rows = []
    mid = _next_id(ProjectMembership)
    for pid, lead in world.projects:
        people = {lead, *rng.sample(world.users, 3)}
        if pid - first < world.sizes["pi_projects"]:
            people.add(researcher)  # the researcher works in the PI's projects
        world.members[pid] = sorted(people)
        for user in sorted(people):
            role = "pi" if user == lead else "member"
            member_rows.append((mid, pid, user, role, NOW - dt.timedelta(days=1000)))
            mid += 1
    return n + copy_rows(
        ProjectMembership, ["project_id", "user_id", "role", "added_at"], member_rows
    )


def _allocations(world: World) -> int:
    from allocations.models import Allocation, AllocationRequest

    rng = world.rng
    first, rfirst = _next_id(Allocation), _next_id(AllocationRequest)
    rows, requests = [], []
    for i in range(world.sizes["allocations"]):
        pid, lead = world.projects[i % len(world.projects)]
        fid, ntid, _rate = world.facilities[rng.randrange(len(world.facilities))]
        start = _when(rng, NOW - dt.timedelta(days=1095), NOW - dt.timedelta(days=30))
        end = start + dt.timedelta(days=365)
        status = "active" if end > NOW else "expired"
        hours = Decimal(rng.choice([400, 1000, 5000, 20000, 50000]))
        created = start - dt.timedelta(days=7)
        rows.append(
            (
                first + i,
                pid,
                fid,
                ntid,
                "full",
                hours,
                start.date(),
                end.date(),
                status,
                f"c{pid}",
                created,
                start,
            )
        )
        requests.append(
            (
                rfirst + i,
                pid,
                fid,
                ntid,
                "full",
                int(hours),
                start.date(),
                end.date(),
                "Centre-scale request.",
                "approved",
                lead,
                created,
                created,
                int(hours),
                first + i,
                created,
            )
        )
        world.allocations.append((first + i, pid, fid, start, min(end, NOW)))
    n = copy_rows(
        Allocation,
        [
            "project_id",
            "facility_id",
            "node_type_id",
            "kind",
            "gpu_hours",
            "start_date",
            "end_date",
            "status",
            "account_name",
            "created_at",
            "activated_at",
        ],
        rows,
    )
    return n + copy_rows(
        AllocationRequest,
        [
            "project_id",
            "facility_id",
            "node_type_id",
            "kind",
            "gpu_hours",
            "start_date",
            "end_date",
            "justification",
            "status",
            "requested_by_id",
            "submitted_at",
            "reviewed_at",
            "granted_gpu_hours",
            "allocation_id",
            "created_at",
        ],
        requests,
    )


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


def _finish(world: World) -> int:
    from django.core.management import call_command
    from django.db import connection

    from allocations.ledger import ledger_rebuild

    written = ledger_rebuild()
    with connection.cursor() as cursor:
        for app in ("auth", "allocations", "launcher", "notebooks"):
            from io import StringIO

            out = StringIO()
            call_command("sqlsequencereset", app, stdout=out, no_color=True)
            if out.getvalue().strip():
                cursor.execute(out.getvalue())
        cursor.execute("ANALYZE")
    return written


def build(seed: int = SEED, factor: float = 1.0) -> World:
    """Write the world into the current (migrated, demo-seeded) database."""
    from django.db import transaction

    world = World(seed, factor)
    with transaction.atomic():
        from django.db import connection

        with connection.cursor() as cursor:  # checked row by row, not queued to the commit
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        for name, step in (
            ("users", _users),
            ("facilities", _facilities),
            ("projects and members", _projects),
            ("requests and allocations", _allocations),
            ("jobs, sweeps, usage", _jobs_sweeps_usage),
            ("notebook sessions", _notebooks),
            ("events", _events),
        ):
            world.timed(name, lambda step=step: step(world))
    world.timed("ledger, sequences, analyse", lambda: _finish(world))
    return world


if __name__ == "__main__":
    import os
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    import django

    django.setup()
    result = build(factor=float(sys.argv[1]) if len(sys.argv) > 1 else 1.0)
    for key, seconds in result.timings.items():
        print(f"{key:28} {result.counts[key]:>10,} rows {seconds:8.1f} s")
