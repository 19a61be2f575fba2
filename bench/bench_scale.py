"""How the portal's cost grows from the demo to a national centre (issue: a centre's year).

Two PostgreSQL databases on the `make services` server:
- `portal_scale_demo`: the demo (`seed_demo`) plus the same world at a hundredth of the size
  (100 users, 30 projects, 120 allocations, 10,000 jobs), rebuilt every run;
- `portal_scale`: the demo plus `bench/scale_world.py`'s centre (10,000 users, 3,000 projects,
  12,000 allocations, 1,000,000 jobs, 5,000,000 usage records), built once and kept
  (`BENCH_SCALE_REBUILD=1` builds it again), so the portal can be served on it as it is.

Each page and API list is requested through Django's test client (the whole middleware stack,
no server) as the role that sees most of it: staff (`admin`), the PI of 20 projects (`pi`), the
researcher with 5,000 jobs (`researcher`). Each scale is served by a process of its own (one
database per process, `--serve`), and the two take turns row by row, demo first then centre
first, in ROUNDS turns: warm-up 2, then N timed a side (BENCH_N, default 15), so a drift in the
machine's speed falls on both. The table gives each scale's p50, their ratio (aim: 1.5x) and the
queries of one request; the reports also as the first view after a change to their settled
months (one request a turn with the kept sums dropped).

    python bench/bench_scale.py          # make bench-scale
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
N = int(os.environ.get("BENCH_N", "15"))
BASE = os.environ.get("DATABASE_URL", "postgres://portal:portal@127.0.0.1:5432/portal")
AIM = 1.5


def _url(db: str) -> str:
    return urllib.parse.urlparse(BASE)._replace(path=f"/{db}").geturl()


def _exists(db: str) -> bool:
    import psycopg

    with psycopg.connect(_url("postgres"), autocommit=True) as conn:
        found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [db]).fetchone()
    return found is not None


def _env(db: str) -> dict:
    return {
        **os.environ,
        "DATABASE_URL": _url(db),
        "DEBUG": "false",
        "SECRET_KEY": os.environ.get("SECRET_KEY", "bench"),
        "EMAIL_URL": "locmem://",
        "CELERY_TASK_ALWAYS_EAGER": "true",
        "CACHE_URL": "",
        "DJANGO_SETTINGS_MODULE": "portal.settings",
        "DB_CONN_MAX_AGE": "600",
    }


def _manage(db: str, *args: str) -> None:
    subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=_env(db), check=True)


def _fresh(db: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(_url("postgres"), autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(db)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(db)))
    _manage(db, "migrate", "--noinput", "-v", "0")
    _manage(db, "seed_demo", "--password", "demo")


def _vacuum(db: str) -> None:
    """VACUUM (ANALYZE), as autovacuum leaves a database in service: a world just written by COPY
    has no visibility map yet, so every index-only scan (a COUNT of jobs) would read the heap."""
    import psycopg

    with psycopg.connect(_url(db), autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE)")


#: Bumped when the world's rows change: a kept world of an older format is built again.
WORLD_FORMAT = "scale world 2: rows in time order"


def _built(db: str) -> bool:
    if not _exists(db):
        return False
    import psycopg

    with psycopg.connect(_url(db)) as conn:
        found = conn.execute(
            "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = %s", [db]
        ).fetchone()
    return found is not None and found[0] == WORLD_FORMAT


def _mark_built(db: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(_url(db), autocommit=True) as conn:
        conn.execute(
            sql.SQL("COMMENT ON DATABASE {} IS {}").format(
                sql.Identifier(db), sql.Literal(WORLD_FORMAT)
            )
        )


def ensure_worlds() -> None:
    _fresh("portal_scale_demo")
    subprocess.run(
        [sys.executable, "bench/scale_world.py", "0.01"],
        cwd=ROOT,
        env=_env("portal_scale_demo"),
        check=True,
    )
    _vacuum("portal_scale_demo")
    if os.environ.get("BENCH_SCALE_REBUILD") or not _built("portal_scale"):
        _fresh("portal_scale")
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "bench/scale_world.py"], cwd=ROOT, env=_env("portal_scale"), check=True
        )
        _vacuum("portal_scale")
        _mark_built("portal_scale")
        print(f"centre world built in {time.perf_counter() - started:.0f} s")
    else:
        _manage("portal_scale", "migrate", "--noinput", "-v", "0")


def _targets() -> list[tuple[str, str, str]]:
    """(row, role, path) for the current database: the objects the role sees most of."""
    from django.db.models import Count

    from allocations.models import Allocation, Project
    from launcher.models import Job, Sweep

    pi_project = (
        Project.objects.filter(pi__username="pi")
        .annotate(n=Count("allocations"))
        .order_by("-n")
        .first()
    )
    allocation = (
        Allocation.objects.filter(project__memberships__user__username="researcher")
        .annotate(n=Count("jobs"))
        .order_by("-n", "pk")
        .first()
    )
    job = Job.objects.filter(created_by__username="researcher").order_by("-pk").first()
    sweep = Sweep.objects.order_by("-pk").first()
    month, year = "2026-10-01", "2025-11-01"
    rows = [
        ("dashboard", "pi", "/"),
        ("dashboard", "researcher", "/"),
        ("project page", "pi", f"/projects/{pi_project.pk}/" if pi_project else ""),
        ("allocation page", "researcher", f"/allocations/{allocation.pk}/" if allocation else ""),
        ("job page", "researcher", f"/jobs/{job.pk}/" if job else ""),
        ("sweep page", "admin", f"/sweeps/{sweep.pk}/" if sweep else ""),
        ("request list", "pi", "/requests/"),
        ("allocation list", "pi", "/allocations/"),
        ("review queue", "reviewer", "/review/"),
        ("staff home", "admin", "/staff/"),
    ]
    for group in ("pi", "project", "facility"):
        rows.append(
            (
                f"report by {group}, month",
                "admin",
                f"/reports/usage/?group_by={group}&since={month}",
            )
        )
        rows.append(
            (f"report by {group}, year", "admin", f"/reports/usage/?group_by={group}&since={year}")
        )
    rows += [
        ("report, PI's year", "pi", f"/reports/usage/?group_by=project&since={year}"),
        (
            "report CSV, year",
            "admin",
            f"/reports/usage/?group_by=project&since={year}&format=csv&table=usage",
        ),
        ("API allocations", "admin", "/api/v1/allocations/"),
        ("API allocations", "pi", "/api/v1/allocations/"),
        ("API jobs", "researcher", "/api/v1/jobs/"),
        (
            "API jobs, allocation filter",
            "researcher",
            f"/api/v1/jobs/?allocation={allocation.pk}" if allocation else "",
        ),
        ("API jobs, page 50", "researcher", "/api/v1/jobs/?page=50"),
        ("API jobs", "admin", "/api/v1/jobs/"),
    ]
    return [row for row in rows if row[2]]


def _beat_passes() -> dict[str, float]:
    """Seconds of the beat's passes whose cost grows with the data: the job rollup, full and
    hourly (run first: the reports read it), the ledger's full daily reconcile and an hourly
    one."""
    from allocations.reconcile import ledger_reconcile
    from launcher.job_months import job_months_rebuild

    timings = {}
    for name, run in (
        ("job rollup, full (daily)", lambda: job_months_rebuild(full=True)),
        ("job rollup (hourly)", job_months_rebuild),
        ("ledger reconcile, full (daily)", lambda: ledger_reconcile(full=True)),
        ("ledger reconcile, incremental (hourly)", ledger_reconcile),
    ):
        started = time.perf_counter()
        run()
        timings[name] = time.perf_counter() - started
    return timings


def serve() -> None:
    """One scale's side, in this process's database: the beat passes (timed), then requests
    on command, so the two scales' requests can take turns (drift in the machine's speed over
    minutes falls on both). Reads tab-separated lines on stdin and answers one JSON line each:
    `time KEY n` (n requests, ms each), `queries KEY` (one request's count, and a CSV's rows),
    `afresh KEY` (one request with the reports' kept settled parts dropped first, ms)."""
    answer, sys.stdout = sys.stdout, sys.stderr  # the protocol's lines only on stdout
    import django

    django.setup()
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from portal.reports.settled import forget

    beat = _beat_passes()
    # The passes rewrote the rollups; autovacuum would tidy them in service before the next.
    with connection.cursor() as cursor:
        for table in ("launcher_jobmonth", "launcher_jobmonthsize", "allocations_usagemonth"):
            cursor.execute(f"VACUUM (ANALYZE) {table}")
    only = os.environ.get("BENCH_ONLY", "")
    targets = {f"{row} | {role}": (role, path) for row, role, path in _targets() if only in row}
    clients: dict[str, Client] = {}
    answer.write(json.dumps({"beat": beat, "rows": list(targets)}) + "\n")
    answer.flush()
    for line in sys.stdin:
        verb, key, *count = line.rstrip("\n").split("\t")
        role, path = targets[key]
        if role not in clients:
            clients[role] = Client()
            assert clients[role].login(username=role, password="demo"), role
        client = clients[role]
        if verb == "queries":
            with CaptureQueriesContext(connection) as queries:
                response = client.get(path)
            # A CSV's rows (its lines but the header): what its time grows with.
            rows = response.content.count(b"\n") - 1 if "format=csv" in path else None
            answer.write(json.dumps({"queries": len(queries), "rows": rows}) + "\n")
            answer.flush()
            continue
        timed: list[float] = []
        for _ in range(int(count[0]) if count else 1):
            if verb == "afresh":
                forget()
            started = time.perf_counter()
            response = client.get(path)
            timed.append((time.perf_counter() - started) * 1000)
            assert response.status_code == 200, (path, role, response.status_code)
        answer.write(json.dumps(timed) + "\n")
        answer.flush()


class _Side:
    """A `serve` process for one database."""

    def __init__(self, db: str):
        self.log = ROOT / "bench" / "out" / f"scale-{db}.log"
        self.log.parent.mkdir(exist_ok=True)
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--serve"],
            cwd=ROOT,
            env=_env(db),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log.open("w"),
            text=True,
        )
        self.ready = self._read()

    def _read(self):
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        if not line:
            raise SystemExit(f"the bench's side stopped: see {self.log}")
        return json.loads(line)

    def ask(self, *parts: object):
        assert self.proc.stdin is not None
        self.proc.stdin.write("\t".join(map(str, parts)) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait()


ROUNDS = 3


def each_n() -> int:
    return max(1, -(-N // ROUNDS)) * ROUNDS


def _measure_both() -> tuple[dict, dict]:
    """Each row's requests in turns, demo then centre then the other way round, ROUNDS times
    (N a side in all, after 2 warm-ups each); p50 ms, queries, and the reports afresh."""
    sides = {"demo": _Side("portal_scale_demo")}
    sides["centre"] = _Side("portal_scale")  # after the demo's beat passes, not beside them
    out: dict[str, dict] = {name: {"beat": side.ready["beat"]} for name, side in sides.items()}
    rows = [k for k in sides["centre"].ready["rows"] if k in sides["demo"].ready["rows"]]
    times: dict[tuple[str, str], list[float]] = {}
    for key in rows:
        for side in sides.values():
            side.ask("time", key, 2)
    each = each_n() // ROUNDS
    for turn in range(ROUNDS):
        order = ["demo", "centre"] if turn % 2 == 0 else ["centre", "demo"]
        for key in rows:
            for name in order:
                times.setdefault((name, key), []).extend(sides[name].ask("time", key, each))
    counts = {(name, key): side.ask("queries", key) for name, side in sides.items() for key in rows}
    # Afterwards: dropping the kept sums drops every report's, which the next timed request of
    # another report would then sum again.
    for turn in range(ROUNDS):
        order = ["demo", "centre"] if turn % 2 == 0 else ["centre", "demo"]
        for key in (k for k in rows if k.startswith("report")):
            for name in order:
                got = sides[name].ask("afresh", key, 1)
                times.setdefault((name, f"afresh {key}"), []).extend(got)
    for name, side in sides.items():
        for key in rows:
            out[name][key] = {"p50": statistics.median(times[(name, key)]), **counts[(name, key)]}
            if key.startswith("report"):
                out[name][key]["afresh"] = statistics.median(times[(name, f"afresh {key}")])
        side.close()
    return out["demo"], out["centre"]


def main() -> None:
    ensure_worlds()
    demo, centre = _measure_both()
    beats = demo.pop("beat"), centre.pop("beat")
    print("\nBeat passes that read the whole ledger or every job (seconds)")
    print("| pass | demo | centre |")
    print("|---|---|---|")
    for name in beats[1]:
        print(f"| {name} | {beats[0][name]:.2f} | {beats[1][name]:.2f} |")
    print(
        f"\nPages and lists, demo vs centre (N={each_n()} a side, in {ROUNDS} turns; p50 ms, "
        f"queries per request); aim {AIM}x"
    )
    print("| row | role | demo p50 | centre p50 | ratio | queries demo | queries centre |")
    print("|---|---|---|---|---|---|---|")
    worst = 0.0
    for key, c in centre.items():
        d = demo.get(key)
        row, role = key.split(" | ")
        if d is None:
            print(f"| {row} | {role} | - | {c['p50']:.1f} | - | - | {c['queries']} |")
            continue
        ratio = c["p50"] / d["p50"]
        worst = max(worst, ratio)
        flag = "" if ratio <= AIM else " (over)"
        print(
            f"| {row} | {role} | {d['p50']:.1f} | {c['p50']:.1f} | {ratio:.2f}x{flag} | "
            f"{d['queries']} | {c['queries']} |"
        )
    print(f"\nworst ratio {worst:.2f}x; load average {os.getloadavg()[0]:.1f}")
    for key, c in centre.items():
        d = demo.get(key)
        if d is not None and c.get("rows") and d.get("rows"):
            print(
                f"{key.split(' | ')[0]}: {d['rows']:,} rows at the demo, {c['rows']:,} at the "
                f"centre; {d['p50'] * 1000 / d['rows']:.1f} against "
                f"{c['p50'] * 1000 / c['rows']:.1f} µs a row (p50, fixed costs included)"
            )
    print("\nReports as the first view after a change to a settled month (p50 ms of one a turn,")
    print("the settled part summed afresh; above, a later view adds the live part to the kept one)")
    print("| row | role | demo | centre | ratio |")
    print("|---|---|---|---|---|")
    for key, c in centre.items():
        d = demo.get(key)
        if d is not None and "afresh" in c:
            ratio = c["afresh"] / d["afresh"]
            print(f"| {key} | {d['afresh']:.1f} | {c['afresh']:.1f} | {ratio:.2f}x |")
    out = ROOT / "bench" / "out"
    out.mkdir(exist_ok=True)
    (out / "scale.json").write_text(json.dumps({"demo": demo, "centre": centre}, indent=1))


if __name__ == "__main__":
    if "--serve" in sys.argv:
        serve()
    else:
        main()
