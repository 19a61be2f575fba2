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

`bench/bench_scale.py` runs it on a database named portal_scale. The rows and COPY are in
bench/scale_rows.py, the jobs and what follows them in bench/scale_work.py.
"""

from __future__ import annotations

import datetime as dt
import sys
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.scale_rows import NOW, SEED, SIZES, World, _next_id, _when, copy_rows  # noqa: E402
from bench.scale_work import _events, _jobs_sweeps_usage, _notebooks  # noqa: E402

__all__ = ["SIZES", "build"]


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
