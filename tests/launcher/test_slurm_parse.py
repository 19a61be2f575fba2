"""Parsing Slurm 22.05 output (shapes captured from the test cluster); no services needed."""

from __future__ import annotations

import datetime as dt

from launcher.slurm.parse import (
    aggregate,
    map_state,
    merge_status,
    parse_sacct_status,
    parse_sacct_usage,
    parse_squeue_status,
)
from launcher.slurm.records import JobState

SACCT_USAGE = """\
2_0|portal_ops|COMPLETED|2|billing=1,cpu=1,gres/gpu=1,node=1|2026-11-22T11:20:57|2026-11-22T11:20:59|arrtok
2_0.batch|portal_ops|COMPLETED|2|cpu=1,gres/gpu=1,mem=0,node=1|2026-11-22T11:20:57|2026-11-22T11:20:59|batch
7|smoke|RUNNING|95|billing=1,cpu=1,gres/gpu=2,node=1|2026-11-22T11:22:06|Unknown|a|name|with|bars
8|smoke|CANCELLED by 1001|0|cpu=1,node=1|None|2026-11-22T11:30:00|cpu-only
"""


def test_usage_rows_carry_job_step_gpus_and_gpu_seconds():
    rows = parse_sacct_usage(SACCT_USAGE)

    assert [(r.job_id, r.step, r.gpus, r.gpu_seconds) for r in rows] == [
        ("2_0", "", 1, 2),
        ("2_0", "batch", 1, 2),
        ("7", "", 2, 190),
        ("8", "", 0, 0),
    ]
    assert rows[1].external_id == "2_0.batch"
    assert rows[2].end is None and rows[2].start == dt.datetime(2026, 11, 22, 11, 22, 6)
    assert rows[3].state == "CANCELLED" and rows[3].start is None


def test_states_map_to_the_portal_vocabulary():
    assert map_state("CANCELLED by 1001") is JobState.CANCELLED
    assert map_state("OUT_OF_MEMORY") is JobState.FAILED
    assert map_state("TIMEOUT") is JobState.TIMEOUT
    assert map_state("COMPLETING") is JobState.RUNNING
    assert map_state("SOMETHING_NEW") is JobState.UNKNOWN


def test_an_array_sums_its_tasks_and_sacct_final_records_win_over_squeue():
    live = parse_squeue_status(
        "5_0|COMPLETED|None|0:03|t\n5_1|RUNNING|None|1:02|t\n5_2|PENDING|JobArrayTaskLimit|0:00|t\n"
    )
    accounted = parse_sacct_status("5_0|FAILED|2:0|3|None|t\n5_1|PENDING|None|0|None|t\n")

    status = aggregate("5", merge_status(live, accounted))

    assert status.state is JobState.RUNNING
    assert status.tasks["5_0"].state is JobState.FAILED and status.tasks["5_0"].exit_code == 2
    assert status.tasks["5_1"].elapsed_seconds == 62
    assert status.tasks["5_2"].reason == "JobArrayTaskLimit"
    assert aggregate("9", {}).state is JobState.UNKNOWN


def test_a_finished_array_fails_if_any_task_failed():
    records = parse_sacct_status("5_0|COMPLETED|0:0|3|None|t\n5_1|FAILED|1:0|3|None|t\n")

    status = aggregate("5", records)

    assert status.state is JobState.FAILED and status.exit_code == 1
