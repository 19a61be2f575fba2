"""Placement's pure parts (launcher/placement/, launcher/slurm/starts.py), no database: the
ranking with fake capacities (local first while the cluster is full, the cluster once it is
free), the waits from slots, history and the scheduler's own words, the calibrated run time, the
sentences, and the placement error per facility."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from launcher.placement.accuracy import Measured, placement_errors
from launcher.placement.interval import RunTime, run_time
from launcher.placement.rank import Option, rank, summary
from launcher.placement.wait import Running, Wait, calibrated, history_wait, slot_wait
from launcher.slurm.starts import parse_start_report

NOW = dt.datetime(2026, 11, 28, 13, 40, tzinfo=dt.UTC)


def option(label: str, *, wait: Wait, run: float = 20 * 60, cost: str = "1.00", **kw) -> Option:
    return Option(
        allocation_id=kw.pop("pk", hash(label) % 1000),
        project="ABC-DEF-001",
        facility=label,
        facility_name=label.title(),
        kind="hpc",
        label=label,
        run=RunTime(run, run * 0.8, run * 1.25, "measured", "a prediction"),
        wait=wait,
        cost=Decimal(cost),
        **kw,
    )


def slurm(wait_seconds: float) -> Wait:
    return Wait(wait_seconds, "backend", "Slurm's own estimate (sbatch --test-only)", backlog=2)


def local(*, slots: int, in_use: int, running: list[Running]) -> Wait:
    return slot_wait(slots=slots, in_use=in_use, need=1, running=running, queue=[])


def test_local_ranks_first_while_the_cluster_is_full_and_the_cluster_once_it_is_free():
    free_local = local(slots=1, in_use=0, running=[])
    full = [
        option("local", wait=free_local, cost="1.00", pk=1),
        option("local-slurm", wait=slurm(25 * 60), cost="0.50", pk=2),
    ]
    freed = [
        option("local", wait=free_local, cost="1.00", pk=1),
        option("local-slurm", wait=slurm(2), cost="0.50", pk=2),
    ]

    while_full = rank(full, prefer="finish", now=NOW)
    once_free = rank(freed, prefer="finish", now=NOW)

    assert [o.label for o in while_full.options] == ["local", "local-slurm"]
    assert while_full.why[2].startswith("Finishes 25 min after local")
    assert [o.label for o in once_free.options] == ["local-slurm", "local"]
    assert once_free.why[1].startswith("Finishes about when local-slurm does, which costs less")


def test_a_busy_local_slot_makes_the_cluster_first():
    busy = local(slots=1, in_use=1, running=[Running(1, 30 * 60)])
    ranked = rank(
        [option("local", wait=busy, pk=1), option("local-slurm", wait=slurm(60), pk=2)],
        prefer="finish",
        now=NOW,
    )

    assert ranked.chosen is not None and ranked.chosen.label == "local-slurm"
    assert busy.seconds == 30 * 60 and "1 of 1 slot in use" in busy.basis


def test_prefer_cost_takes_the_cheapest_and_says_what_the_dearer_buys():
    ranked = rank(
        [
            option("aws-spot", wait=slurm(0), cost="3.10", pk=1),
            option("baskerville", wait=slurm(70 * 60), cost="0.40", pk=2),
        ],
        prefer="cost",
        now=NOW,
    )

    assert ranked.chosen is not None and ranked.chosen.label == "baskerville"
    assert ranked.why[1].startswith("Costs $2.70 more than baskerville, finishing 1 h 10 min")


def test_ineligible_options_come_last_unranked_with_their_reason():
    refused = Option(
        allocation_id=9, project="P", facility="jade2", facility_name="JADE2", kind="hpc",
        label="jade2", refusals=("the allocation is suspended",),
    )  # fmt: skip
    ranked = rank([refused, option("local", wait=slurm(0), pk=1)], prefer="finish", now=NOW)

    assert [o.label for o in ranked.options] == ["local", "jade2"]
    assert ranked.rank_of(refused) is None and ranked.finish_at(refused) is None
    assert ranked.why[9] == "Not eligible: the allocation is suspended."


def test_the_sentence_names_the_chosen_and_why_each_other_lost():
    ranked = rank(
        [
            option("local-slurm", wait=slurm(60), run=21 * 60, cost="0.50", pk=1),
            option("baskerville", wait=slurm(70 * 60), run=40 * 60, cost="0.40", pk=2),
            option("aws-spot", wait=slurm(0), run=40 * 60, cost="3.10", pk=3),
        ],
        prefer="finish",
        now=NOW,
    )

    assert summary(ranked) == (
        "placed on local-slurm: finish predicted 14:02; aws-spot 14:20 (runs 40 min); "
        "baskerville 15:30 (queue 1 h 10 min)"
    )


def test_a_dearer_one_finishing_as_soon_is_said_with_its_price():
    ranked = rank(
        [option("local", wait=slurm(0), cost="0.50", pk=1), option("aws", wait=slurm(30), cost="3.10", pk=2)],
        prefer="finish",
        now=NOW,
    )  # fmt: skip

    assert summary(ranked) == "placed on local: finish predicted 14:00; aws 14:00 but $3.10"


def test_slots_free_as_running_jobs_end_and_the_queue_goes_first():
    wait = slot_wait(
        slots=2,
        in_use=2,
        need=1,
        running=[Running(1, 100), Running(1, 300)],
        queue=[Running(1, 50)],
    )

    assert wait.seconds == 150 and wait.backlog == 1 and wait.source == "slots"
    two = slot_wait(slots=2, in_use=2, need=2, running=[Running(1, 100), Running(1, 300)], queue=[])
    assert two.seconds == 300
    notebook = slot_wait(slots=1, in_use=1, need=1, running=[], queue=[])
    assert notebook.seconds == 3600  # busy with something that is no job: an hour, stated


def test_history_is_the_median_of_recent_waits_or_says_there_is_none():
    assert history_wait([10, 50, 400]).seconds == 50
    assert "median of the last 3 waits" in history_wait([10, 50, 400]).basis
    none = history_wait([], why="Slurm gave no start time")
    assert none.seconds == 0 and none.source == "none"
    assert none.basis.startswith("Slurm gave no start time; no measurement yet")


def test_a_wait_is_corrected_by_the_facilitys_past_real_over_predicted_once_there_are_five():
    scheduler = Wait(600.0, "backend", "sbatch --test-only: starts in 10 min", backlog=3)
    # Jobs ahead ended at a tenth of their time limits: real waits a tenth of the estimates.
    past = [(600.0, 60.0), (300.0, 33.0), (1200.0, 110.0), (900.0, 95.0), (10.0, 200.0)]

    assert calibrated(scheduler, past) == scheduler  # four usable: 10 s is under the floor
    fixed = calibrated(scheduler, [*past, (450.0, 45.0)])

    assert fixed.seconds == pytest.approx(60.0)  # median of 0.1, 0.11, 0.0917, 0.106, 0.1
    assert fixed.raw_seconds == 600.0 and fixed.uncorrected == 600.0
    assert fixed.source == "backend" and fixed.backlog == 3
    assert fixed.basis.startswith(scheduler.basis) and "x 0.10" in fixed.basis
    assert "last 5 placed jobs here" in fixed.basis
    history = history_wait([120.0, 60.0])
    assert calibrated(history, [*past, (450.0, 45.0)]) == history  # measured already
    assert scheduler.uncorrected == 600.0 and scheduler.raw_seconds is None


def test_the_run_time_is_calibrated_on_measured_runs_with_an_interval():
    calibrated = run_time(
        predicted_hours=0.5, source="measured", basis="b", confidence="high",
        ratios=[1.1, 1.2, 1.2, 1.3, 1.4], wall_time_minutes=120, node_type="local-gpu",
    )  # fmt: skip
    assert calibrated.seconds == pytest.approx(1800 * 1.2)
    assert calibrated.low is not None and calibrated.high is not None
    assert calibrated.low == pytest.approx(1800 * 1.14) and calibrated.high < 1800 * 1.4
    assert "last 5 measured runs on local-gpu" in calibrated.basis

    stated = run_time(
        predicted_hours=0.5, source="recommender", basis="b", confidence="medium",
        ratios=[1.1], wall_time_minutes=120,
    )  # fmt: skip
    assert (stated.low, stated.seconds, stated.high) == pytest.approx((1206, 1800, 2700))

    unknown = run_time(
        predicted_hours=None, source="wall-time", basis="no node type", confidence="",
        ratios=[], wall_time_minutes=30,
    )  # fmt: skip
    assert unknown.seconds == 1800 and unknown.low is None and "wall time" in unknown.basis


SAID = (
    "sbatch: Job 16 to start at 2026-11-28T21:05:37 using 1 processors on nodes vm in partition gpu"
)


def test_the_schedulers_answer_is_read_against_its_own_clock():
    report = parse_start_report(
        "now 2026-11-28T21:03:38\n"
        f"test {SAID}\n"
        "testrc 0\n"
        "queue RUNNING|gres:gpu:1|2026-11-28T21:03:37\n"
        "queue RUNNING|gres:gpu:1|2026-11-28T21:03:37\n"
        "queue PENDING|gres:gpu:2|2026-11-28T21:09:00\n"
        "queue PENDING|N/A|N/A\n"
    )

    assert report.wait_seconds == 119 and report.refused == ""
    assert (report.running, report.pending, report.pending_gpus) == (2, 2, 2)
    assert report.last_pending_start_seconds == 322


def test_a_refusal_by_the_scheduler_is_kept_in_its_words():
    report = parse_start_report(
        "now 2026-11-28T21:03:38\n"
        "test sbatch: error: Batch job submission failed: Requested node configuration is not "
        "available\ntestrc 1\n"
    )

    assert report.wait_seconds is None
    assert report.refused.endswith("Requested node configuration is not available")
    assert parse_start_report("now 2026-11-28T21:03:38\ntest odd\ntestrc 0\n").wait_seconds is None


def test_placement_error_is_the_median_and_90th_percentile_per_facility():
    rows = placement_errors(
        [
            Measured("local-slurm", 120, 100, 700, 660),
            Measured("local-slurm", 60, 0, None, None),
            Measured("local-slurm", 0, 10, 600, 640),
            Measured("local", 0, 1, 300, 290),
        ]
    )

    assert [r.facility for r in rows] == ["local", "local-slurm"]
    slurm_row = rows[1]
    assert slurm_row.jobs == 3 and slurm_row.wait_median == 20 and slurm_row.finished == 2
    assert slurm_row.wait_p90 == pytest.approx(52)  # 10, 20, 60 -> 20 + 0.8 x 40
    assert slurm_row.finish_median == 40 and slurm_row.wait_bias == 20
