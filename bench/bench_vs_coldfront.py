"""Our portal against ColdFront 1.1.10, side by side in one run, on the same machine.

Both are served by gunicorn with the same number of sync workers (BENCH_WORKERS, default 2),
each on SQLite, each logged in as a PI (ColdFront: cgray; ours: pi), and both get the same wrk
commands on the equivalent pages:

| row | ours | ColdFront 1.1.10 |
|---|---|---|
| project list | `/` (dashboard) | `/project/` |
| allocation detail | `/allocations/<id>/` | `/allocation/<id>/` |
| request detail | `/requests/<id>/` | `/allocation/<id>/` of a "New" allocation (its requests) |
| request POST | `POST /requests/new/` (form) | `POST /allocation/project/<id>/create` (form) |
| API allocations | `GET /api/v1/allocations/` | `GET /api/allocations/` (its read-only API plugin) |
| API requests | `GET /api/v1/requests/` | none for a PI (`/api/allocation-requests/` is admin-only) |
| API jobs | `GET /api/v1/jobs/` | none (ColdFront launches no work) |

Three scales (bench/vs_coldfront_data.py; BENCH_SCALES, default demo,large,centre): each side's
demo data, and each side loaded with the same larger data through its own ORM, 200 projects
(large) or a national centre's 3,000 (centre: 2-3 minutes of loading a side here, kept with
BENCH_KEEP_DATA=1). The sides are in bench/vs_coldfront_sides.py. ColdFront is installed from
PyPI into its own virtualenv under var/bench-cf/ once. A POST row counts the rows each side
really created, so a refused form cannot pass for a fast one. Prints one table and writes
bench/out/vs_coldfront.json.

Paired rounds: both servers run at once (an idle gunicorn takes no CPU) and each row is measured
on both sides back to back, BENCH_ROUNDS times (default 3), the side that goes first alternating
from round to round (the reads' rounds first, then the POSTs', so no page reads the rows a
POST added). A row's figures are each side's median over the rounds and its ratios the
median of the rounds' own ratios, with their range; so a change in the machine's load between
one side's turn and the other's moves a round's ratio, not the result (before the twelfth round
ColdFront was measured whole, then ours, minutes later: docs/performance.md).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).resolve().parent))
import vs_coldfront_data as data  # noqa: E402
from vs_coldfront_rows import CF_VERSION, ROWS, report, rounds_row  # noqa: E402
from vs_coldfront_sides import (  # noqa: E402
    BROKER,
    EAGER,
    ROOT,
    VAR,
    WORKERS,
    ColdFront,
    Ours,
    Side,
    ensure_coldfront,
)

DURATION = os.environ.get("BENCH_DURATION", "6s")  # each round
SEQ_DURATION = os.environ.get("BENCH_SEQ_DURATION", "3s")
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
SCALES = os.environ.get("BENCH_SCALES", "demo,large,centre").split(",")
# BENCH_KEEP_DATA=1: reuse the data a previous run loaded (var/bench-cf/<scale>/, ids.json)
# instead of loading it again (minutes on a busy machine); each run still starts both servers
# afresh, each on its database as it was loaded (a copy kept beside it, `<db>.loaded`), so the
# rows an earlier run's POSTs added (hundreds) do not slow the next run's list endpoints; ours
# is then migrated, so an index added to the tree since the data was loaded is there.
KEEP_DATA = os.environ.get("BENCH_KEEP_DATA", "") == "1"


# ---- measuring -------------------------------------------------------------------------------


def wrk(
    side: Side, path: str, connections: int, duration: str, *, body: str | None = None
) -> dict[str, float]:
    script = "wrk_form_post.lua" if body is not None else "wrk_report.lua"
    cmd = [
        "wrk",
        "-t",
        str(min(connections, 2)),
        "-c",
        str(connections),
        "-d",
        duration,
        "--timeout",
        "30s",
        "-s",
        str(ROOT / "bench" / script),
        "-H",
        f"Cookie: {side.cookie}",
        "-H",
        f"Referer: {side.base}{path}",
        side.base + path,
    ]
    env = {
        **os.environ,
        "BENCH_REPORT_LUA": str(ROOT / "bench" / "wrk_report.lua"),
        "BENCH_BODY": body or "",
    }
    out = subprocess.run(cmd, capture_output=True, text=True, env=env).stdout
    match = re.search(r"RESULT (.*)", out)
    if not match:
        sys.exit(f"wrk gave no result for {side.name} {path}:\n{out}")
    return {k: float(v) for k, v in (kv.split("=") for kv in match.group(1).split())}


def measure(side: Side, path: str, *, body: str | None = None) -> dict[str, float]:
    before = side.count_requests() if body is not None else 0
    seq = wrk(side, path, 1, SEQ_DURATION, body=body)
    c8 = wrk(side, path, 8, DURATION, body=body)
    result = {
        "seq_p50": seq["p50"],
        "seq_p95": seq["p95"],
        "c8_rps": c8["rps"],
        "c8_p99": c8["p99"],
        "errors": seq["errors"] + c8["errors"],
    }
    if body is not None:
        sent = seq["requests"] + c8["requests"]
        created = side.count_requests() - before
        if created < 0.95 * sent:  # wrk may count a few in flight when it stops
            sys.exit(
                f"{side.name}: {int(sent)} POSTs created only {created} rows: the form "
                "was refused, so the timing would not be a request being made"
            )
        result["created"] = created
    return result


def check_page(side: Side, path: str) -> None:
    reply = side.get(path)
    if reply.status_code != 200:
        sys.exit(f"{side.name}: {path} answered {reply.status_code}")


def run_scale(scale: str) -> list[dict]:
    folder = VAR / scale
    saved = folder / "ids.json"
    reuse = (
        KEEP_DATA
        and saved.exists()
        and all(
            (folder / name).exists()
            for name in ("ours.sqlite3.loaded", "coldfront/coldfront.db.loaded")
        )
    )
    if not reuse:
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
    sides = [ColdFront(folder), Ours(folder)]
    started = time.monotonic()
    if reuse:
        ids = json.loads(saved.read_text())
        for side in sides:  # as loaded: not with the rows an earlier run's POSTs added
            shutil.copy(side.db.with_name(side.db.name + ".loaded"), side.db)
            side.upgrade()
        print(f"[{scale}] data of a previous run reused ({saved})", flush=True)
    else:
        ids = {}
        for side in sides:
            began = time.monotonic()
            ids[side.name] = side.load(scale)
            print(f"[{scale}] {side.name} loaded in {time.monotonic() - began:.0f} s", flush=True)
        for side in sides:
            shutil.copy(side.db, side.db.with_name(side.db.name + ".loaded"))
        saved.write_text(json.dumps(ids))
        print(f"[{scale}] data loaded in {time.monotonic() - started:.0f} s", flush=True)
    try:
        for side in sides:  # both at once: each row is measured on both sides back to back
            side.serve()
        plans = {}
        for side in sides:
            side.login()
            pages = {row: path for row, path in side.pages(ids[side.name]).items() if path}
            for path in pages.values():
                check_page(side, path)
            plans[side.name] = (pages, side.post(ids[side.name]))
        rounds: list[dict[str, dict[str, dict]]] = [
            {side.name: {} for side in sides} for _ in range(ROUNDS)
        ]
        # The reads first, every round of them, then the POSTs: a POST adds rows (hundreds)
        # that the list pages would otherwise read in the next round, on either side.
        for phase in ([row for row in ROWS if row != "request POST"], ["request POST"]):
            for number, results in enumerate(rounds):
                order = sides if number % 2 == 0 else sides[::-1]
                for row in phase:
                    for side in order:
                        pages, (post_path, body) = plans[side.name]
                        if row == "request POST":
                            results[side.name][row] = measure(side, post_path, body=body)
                        elif row in pages:
                            results[side.name][row] = measure(side, pages[row])
                print(
                    f"[{scale}] {'POST' if phase == ['request POST'] else 'reads'}: round "
                    f"{number + 1} of {ROUNDS} done",
                    flush=True,
                )
    finally:
        for side in sides:
            if side.proc is not None:
                side.stop()
    return [rounds_row(scale, row, rounds) for row in ROWS]


def empty_broker() -> None:
    """The bench's own Redis database, emptied (the tasks our POSTs queued are never run)."""
    if EAGER:
        return
    try:
        redis.Redis.from_url(BROKER).flushdb()
    except redis.ConnectionError:
        sys.exit(f"Redis does not answer at {BROKER}: run `make services` (or BENCH_EAGER=1)")


def main() -> None:
    if not shutil.which("wrk"):
        sys.exit("wrk is not installed: run `make services` (it installs wrk)")
    ensure_coldfront()
    empty_broker()
    load_before = os.getloadavg()
    try:
        rows = [row for scale in SCALES for row in run_scale(scale)]
    finally:
        empty_broker()
    report(
        rows,
        f"gunicorn {WORKERS} sync workers each, SQLite each, logged in as a PI; "
        f"{ROUNDS} paired rounds of wrk -c8 {DURATION} and -c1 {SEQ_DURATION}",
    )
    out = ROOT / "bench" / "out"
    out.mkdir(parents=True, exist_ok=True)
    meta = {
        "workers": WORKERS,
        "rounds": ROUNDS,
        "duration": DURATION,
        "seq_duration": SEQ_DURATION,
        "coldfront": CF_VERSION,
        "cpus": os.cpu_count(),
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg(),
        "shapes": {scale: data.SHAPES.get(scale, "each side's demo data") for scale in SCALES},
    }
    (out / "vs_coldfront.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    print(
        f"Load average before/after: {load_before[0]:.2f} / {meta['loadavg_after'][0]:.2f}; "
        f"written to {out / 'vs_coldfront.json'}"
    )


if __name__ == "__main__":
    main()
