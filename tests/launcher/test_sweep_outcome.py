"""A sweep's header says what happened to it (issue 39: a cancelled sweep's header said
"Finished, 6 of 6 finished" beside "cancelled 6")."""

from __future__ import annotations

import pytest

from launcher.sweep_selectors import sweep_outcome


@pytest.mark.parametrize(
    ("counts", "done", "expected"),
    [
        ({"running": 2, "succeeded": 4}, False, ("running", "In progress")),
        ({"cancelled": 6}, True, ("cancelled", "Cancelled")),
        ({"failed": 4, "timeout": 1, "cancelled": 1}, True, ("failed", "Failed")),
        ({"succeeded": 6}, True, ("succeeded", "Finished")),
        ({"succeeded": 3, "stopped_early": 2, "cancelled": 1}, True,
         ("succeeded", "Finished (1 cancelled)")),
        ({"succeeded": 1, "cancelled": 2, "failed": 3}, True,
         ("succeeded", "Finished (2 cancelled, 3 failed)")),
        ({"stopped_early": 5}, True, ("succeeded", "Finished")),
    ],
)  # fmt: skip
def test_the_header_says_how_the_sweep_ended(counts, done, expected):
    assert sweep_outcome(counts, done=done) == expected


def test_the_leaderboard_keeps_a_bars_width_and_the_metrics_bounds():
    """Issue 39: one combination was one bar across the whole chart."""
    from launcher.charts import leaderboard_figure

    def row(lr: float) -> dict:
        metric = {"mean": 0.9, "ci": [0.85, 0.95]}
        return {"model": "resnet18", "lr": lr, "lr_step": 5, "weight_decay": 0.0, "f1": metric}

    one = leaderboard_figure([row(0.1)], "f1")["layout"]
    assert one["xaxis"]["range"] == [-2.5, 2.5]  # the bar a fifth of the width, centred
    assert one["yaxis"]["range"] == [0, 1.02]
    six = leaderboard_figure([row(10**-i) for i in range(6)], "f1")["layout"]
    assert six["xaxis"]["range"] == [-0.5, 5.5]
