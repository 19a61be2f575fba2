"""The sweep page under early stopping (ASHA): the leaderboard's "Furthest rung" column and
"stopped early" in place of a stopped configuration's metrics, the validation metric per
configuration over epochs with the rungs drawn, the summary (cells stopped, GPU-hours charged
and saved, worst and expected case) and the "Stopped early" badge on a cell, all inside a 390 px
phone; a sweep without early stopping shows none of it."""

from __future__ import annotations

import datetime as dt
import html
import json
import re
from decimal import Decimal
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import timezone

from launcher import charts
from launcher.models import Job, Sweep
from launcher.sweep_selectors import sweep_schedule
from launcher.sweepgrid import combo_label
from tests.browser import login
from tests.factories import AllocationFactory

pytestmark = pytest.mark.django_db
S = Job.State
ASHA = {"method": "asha", "eta": 3, "min_epochs": 1}
GRID = {
    "models": ["resnet18"],
    "lrs": [0.1, 0.01, 0.001],
    "lr_steps": [5],
    "weight_decays": [0.0001],
    "folds": 1,
    "fixed": {"epochs": 3},
    "early_stopping": ASHA,
}
PLAIN_GRID = {key: value for key, value in GRID.items() if key != "early_stopping"}
ASHA_SENTENCE = "outside the top 1/3"


@pytest.fixture
def allocation(project, facility):
    return AllocationFactory(project=project, facility=facility, gpu_hours=Decimal("50"))


def cell_params(lr: float) -> dict:
    return {
        "model": "resnet18",
        "lr": lr,
        "lr_step": 5,
        "weight_decay": 0.0001,
        "fold": 0,
        "folds": 1,
        "epochs": 3,
    }


def epochs(values: list[float]) -> list[dict]:
    """progress.json's finished epochs (the trainer's `epoch_metrics`)."""
    return [
        {"epoch": e, "val_loss": round(1 - v, 3), "val": {"accuracy": v, "roc_auc": v}}
        for e, v in enumerate(values, 1)
    ]


def make_sweep(allocation, researcher, *, grid=GRID, staged=True) -> Sweep:
    """Three configurations, one fold each: lr=0.1 passes rung 1 (epoch 1) and finishes; lr=0.01
    and lr=0.001 rank outside the top 1/3 there and stop (with early stopping); without it they
    are still running."""
    now = timezone.now()
    sweep = Sweep.objects.create(
        allocation=allocation,
        created_by=researcher,
        name="asha page",
        grid=grid,
        params={"dataset": "synthetic-ct"},
        size=3,
        concurrency=3,
        token=f"portal-sweep-page-{staged}",
        estimate_gpu_hours=Decimal("1.500"),
        expected_gpu_hours=Decimal("0.700") if staged else None,
        staged=staged,
    )
    labels = [combo_label(cell_params(lr)) for lr in GRID["lrs"]]
    for index, lr in enumerate(GRID["lrs"]):
        first = index == 0
        fields: dict = {
            "state": S.SUCCEEDED if first else (S.STOPPED_EARLY if staged else S.RUNNING),
            "progress": {
                "epoch": 3 if first else 1,
                "epochs": 3,
                "epoch_metrics": epochs([0.7, 0.8, 0.9] if first else [0.5 - 0.1 * index]),
            },
            "started_at": now - dt.timedelta(seconds=30 if first else 10),
            "gpu_seconds": 30 if first else 10,
        }
        if first:
            fields["metrics"] = {
                "accuracy": 0.9,
                "recall": 0.8,
                "specificity": 0.95,
                "roc_auc": 0.9,
            }
            fields["finished_at"] = now
        elif staged:
            fields.update(finished_at=now, stopped_at_epoch=1, rung=0)
        Job.objects.create(
            allocation=allocation,
            sweep=sweep,
            created_by=researcher,
            token=sweep.token,
            array_index=index,
            params=cell_params(lr),
            **fields,
        )
    if staged:
        sweep.schedule = {
            "rungs": [1],
            "eta": 3,
            "metric": "accuracy",
            "values": {
                "0": {label: [0.7 - 0.2 * i, 0.3 + 0.2 * i] for i, label in enumerate(labels)}
            },
            "configs": {
                label: (
                    {"passed": 0, "stopped_at_rung": None, "epoch": 1}
                    if i == 0
                    else {"passed": -1, "stopped_at_rung": 0, "epoch": 1}
                )
                for i, label in enumerate(labels)
            },
        }
        sweep.save(update_fields=["schedule"])
    return sweep


def page(client, researcher, sweep) -> str:
    client.force_login(researcher)
    response = client.get(f"/sweeps/{sweep.pk}/")
    assert response.status_code == 200
    return response.content.decode()


def section(text: str, element_id: str) -> str:
    start = text.index(f'id="{element_id}"')
    return text[start : text.index("</section>", start)]


def figure(text: str, script_id: str) -> dict:
    found = re.search(
        rf'<script id="{script_id}" type="application/json">(.*?)</script>', text, re.S
    )
    assert found, script_id
    return json.loads(html.unescape(found.group(1)))


def test_the_page_shows_rungs_stopped_configurations_the_curve_and_the_savings(
    client, researcher, allocation
):
    sweep = make_sweep(allocation, researcher)
    text = page(client, researcher, sweep)

    board = section(text, "sweep-board")
    assert "Furthest rung</th>" in board
    assert 'title="ASHA (asynchronous successive halving): at each rung epoch' in board
    assert "rung 1 of 1 (epoch 1), then finished" in board
    assert board.count(f"stopped at rung 1 (epoch 1): {ASHA_SENTENCE}") == 2
    # A stopped configuration has no test metrics: it says so in each metric cell.
    assert board.count('<td class="muted">stopped early</td>') == 2 * 4
    assert "0.900" in board  # the finished configuration's accuracy

    # The validation accuracy per configuration over epochs, the rung drawn and labelled.
    fig = figure(text, "sweep-epochs-data")
    assert 'id="chart-sweep-epochs"' in board
    assert [a["text"] for a in fig["layout"]["annotations"]] == ["rung 1 (epoch 1)"]
    assert [(s["x0"], s["line"]["dash"]) for s in fig["layout"]["shapes"]] == [(1, "dash")]
    assert fig["layout"]["yaxis"]["range"] == [0, 1]
    low, high = fig["layout"]["xaxis"]["range"]
    assert 0.5 < low < 1 and 3 < high < 3.5
    lines = {t["name"]: t for t in fig["data"]}
    finished = lines["resnet18 lr=0.1 step=5 wd=0.0001"]
    assert finished["x"] == [1, 2, 3] and finished["y"] == [0.7, 0.8, 0.9]
    assert "opacity" not in finished
    stopped = lines["resnet18 lr=0.01 step=5 wd=0.0001 (stopped)"]
    assert stopped["x"] == [1] and stopped["opacity"] < 1 and stopped["line"]["dash"] == "dash"

    # The summary at the top, and the worst and expected case.
    summary = section(text, "sweep-progress")
    said = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", summary)).split())
    assert "Early stopping (ASHA, eta 3, rungs at epoch 1)" in said
    assert "2 cells stopped early" in said
    assert "2 cells stopped early · 0.01 GPU-hours charged · about 0.01 GPU-hours saved" in said
    # Two stopped cells x 2 epochs not run x 10 s an epoch (the finished cell's) = 40 s.
    assert sweep_schedule(sweep)["saved_gpu_hours_estimate"] == pytest.approx(40 / 3600, abs=1e-6)
    assert "saved (an estimate: the epochs each stopped cell did not run" in said
    assert "Worst case 1.50 GPU-hours (every cell to its last epoch)" in said
    assert "expected 0.70 (from the rung schedule)" in said

    # The cells: a stopped cell's badge, with its epoch.
    cells = section(text, "sweep-cells")
    badge = r'<span class="status status-stopped_early">Stopped early</span>\s*at epoch 1\b'
    assert len(re.findall(badge, cells)) == 2
    css = (Path(settings.BASE_DIR) / "static" / "css" / "portal.css").read_text()
    assert re.search(r"\.status-stopped_early\s*\{[^}]*background", css)


def test_a_sweep_without_early_stopping_shows_none_of_it(client, researcher, allocation):
    text = page(
        client, researcher, make_sweep(allocation, researcher, grid=PLAIN_GRID, staged=False)
    )
    for absent in (
        "Furthest rung",
        "stopped at rung",
        "Early stopping (",
        "stopped early",
        "status-stopped_early",
        "Worst case",
        "sweep-epochs",
        "rung 1 (epoch 1)",
        "Not enough epochs yet",
    ):
        assert absent not in text, absent
    assert '<span class="status status-running">Running</span>' in text
    assert '<td class="muted">' not in section(text, "sweep-board")


def test_with_one_epoch_so_far_the_page_says_there_is_no_curve_yet(client, researcher, allocation):
    sweep = make_sweep(allocation, researcher)
    Job.objects.filter(sweep=sweep, array_index=0).update(
        progress={"epoch": 1, "epochs": 3, "epoch_metrics": epochs([0.7])}, metrics=None
    )
    text = page(client, researcher, sweep)
    assert "Not enough epochs yet for the curve" in text
    assert 'id="chart-sweep-epochs"' not in text and "sweep-epochs-data" not in text


def test_the_curve_averages_a_configuration_over_its_folds_and_reads_finished_history():
    params = {"model": "resnet18", "lr": 0.01, "lr_step": 5, "weight_decay": 0.0001, "folds": 2}
    schedule = {"metric": "roc_auc", "epochs": 27, "rungs": [1, 3, 9], "configurations": []}
    cells = [
        {"params": {**params, "fold": 0}, "epoch_metrics": epochs([0.6, 0.7])},
        # A finished cell: its epochs from metrics.json's history.
        {"params": {**params, "fold": 1}, "epoch_metrics": None, "history": epochs([0.8, 0.9])},
        # A cell that has reported no epoch yet draws nothing.
        {"params": {**params, "lr": 0.1, "fold": 0}, "progress": {"epoch": 1}},
    ]
    fig = charts.sweep_epochs_figure(cells, schedule)
    assert fig is not None
    (line,) = fig["data"]
    assert line["x"] == [1, 2] and line["y"] == [pytest.approx(0.7), pytest.approx(0.8)]
    assert line["customdata"] == [2, 2]
    assert [a["text"] for a in fig["layout"]["annotations"]] == [
        "rung 1 (epoch 1)",
        "rung 2 (epoch 3)",
        "rung 3 (epoch 9)",
    ]
    assert fig["layout"]["yaxis"]["title"]["text"] == "validation ROC AUC"
    assert fig["layout"]["xaxis"]["tickformat"] == "d"
    # One epoch so far, over every configuration: no curve yet (the page says so).
    one_epoch = [{**cells[0], "epoch_metrics": epochs([0.6])}, cells[2]]
    assert charts.sweep_epochs_figure(one_epoch, schedule) is None


@pytest.mark.django_db(transaction=True)
def test_at_390_px_the_rung_column_summary_and_curve_stay_inside_the_page(
    page, live_server, researcher, allocation
):
    sweep = make_sweep(allocation, researcher)
    login(page, live_server, researcher.username)
    page.set_viewport_size({"width": 390, "height": 900})
    page.goto(f"{live_server.url}/sweeps/{sweep.pk}/")
    page.locator("#chart-sweep-epochs .annotation-text").first.wait_for()
    assert (
        "rung 1 (epoch 1)"
        in page.locator("#chart-sweep-epochs .annotation-text").all_text_contents()
    )
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    for selector in ("#sweep-early-stopping", "#sweep-expected", "#chart-sweep-epochs"):
        box = page.locator(selector).bounding_box()
        assert box and box["x"] >= 0 and box["x"] + box["width"] <= 390, (selector, box)
    # The leaderboard (with its new column) scrolls inside its card, not the page.
    scroller = page.locator("#sweep-board .table-scroll").bounding_box()
    assert scroller and scroller["x"] + scroller["width"] <= 390
