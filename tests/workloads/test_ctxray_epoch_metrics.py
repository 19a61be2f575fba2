"""Each finished epoch's validation loss and slice-level metrics reach progress.json (what the
portal's successive halving compares runs on) and metrics.json's history, and a run stopped by
SIGTERM and resumed still reports the epochs it finished before the stop."""

import json
import os
import signal

import numpy as np
import pytest

from launcher.workloads.ctxray import TrainConfig, trainer
from launcher.workloads.ctxray import progress as progress_module
from launcher.workloads.ctxray.metrics import METRICS, point_metrics
from launcher.workloads.ctxray.progress import EPOCH_METRICS, Progress, epoch_metrics


def _config(data, out, **overrides):
    # The smallest run that still trains: 32 px, 4 steps an epoch, no bootstrap, one thread.
    settings = dict(
        data=str(data),
        out=str(out),
        model="resnet18",
        epochs=2,
        size=32,
        batch_size=8,
        lr=1e-3,
        bootstrap=0,
        progress_every=1,
        threads=1,
        seed=1,
        deterministic=True,
    )
    return TrainConfig(**{**settings, **overrides})


@pytest.fixture
def writes(monkeypatch):
    """Every progress.json the trainer writes, in order."""
    seen = []
    original = progress_module.write_json

    def record(path, data):
        seen.append(json.loads(json.dumps(data)))
        original(path, data)

    monkeypatch.setattr(progress_module, "write_json", record)
    return seen


def _assert_epoch_entry(entry, epoch):
    assert entry["epoch"] == epoch
    assert isinstance(entry["val_loss"], float) and entry["val_loss"] >= 0
    assert set(entry["val"]) == set(METRICS)
    for name, value in entry["val"].items():
        assert value is None or 0.0 <= value <= 1.0, (name, value)
        assert value is None or value == round(value, 6)
    assert entry["val"]["accuracy"] is not None  # defined whenever there is a validation set


def test_every_write_after_an_epoch_lists_the_finished_epochs(ct_slices, tmp_path, writes):
    result = trainer.train(_config(ct_slices, tmp_path))

    assert result.status == "succeeded"
    assert EPOCH_METRICS not in writes[0]  # nothing finished yet
    finished = 0
    for data in writes:
        if EPOCH_METRICS in data:
            assert len(data[EPOCH_METRICS]) >= finished  # never loses an epoch
            finished = len(data[EPOCH_METRICS])
            for n, entry in enumerate(data[EPOCH_METRICS], start=1):
                _assert_epoch_entry(entry, n)
        else:
            assert finished == 0, data
    final = json.loads((tmp_path / "progress.json").read_text())
    assert final["state"] == "succeeded" and final["epochs"] == 2  # the epoch count stays
    assert [e["epoch"] for e in final[EPOCH_METRICS]] == [1, 2]
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    for entry, reported in zip(metrics["history"], final[EPOCH_METRICS], strict=True):
        assert set(entry["val"]) == set(METRICS)
        assert round(entry["val_loss"], 6) == reported["val_loss"]
        assert {k: v if v is None else round(v, 6) for k, v in entry["val"].items()} == (
            reported["val"]
        )


def test_a_resumed_run_still_lists_the_epochs_before_the_stop(
    ct_slices, tmp_path, monkeypatch, writes
):
    # SIGTERM arrives in the first step of epoch 2, as a scheduler's time limit would.
    ended, sent = [], []
    end_epoch, step_done = trainer._end_epoch, Progress.step_done

    def counting_end_epoch(run, val_set):
        end_epoch(run, val_set)
        ended.append(run.state.epoch)

    def step_done_then_signal(self):
        step_done(self)
        if len(ended) == 1 and not sent:
            sent.append(True)
            os.kill(os.getpid(), signal.SIGTERM)  # the trainer's StopFlag handles it

    monkeypatch.setattr(trainer, "_end_epoch", counting_end_epoch)
    monkeypatch.setattr(Progress, "step_done", step_done_then_signal)
    stopped = trainer.train(_config(ct_slices, tmp_path))

    assert stopped.status == "preempted" and sent
    before = json.loads((tmp_path / "progress.json").read_text())
    assert before["state"] == "preempted" and before["epoch"] == 2 and before["step"] >= 1
    assert len(before[EPOCH_METRICS]) == 1
    _assert_epoch_entry(before[EPOCH_METRICS][0], 1)

    writes.clear()
    resumed = trainer.train(_config(ct_slices, tmp_path, resume=True))  # signals no more

    assert resumed.status == "succeeded" and len(sent) == 1
    # From its first write on, before it finishes an epoch of its own.
    assert writes and all(data[EPOCH_METRICS][0] == before[EPOCH_METRICS][0] for data in writes)
    after = json.loads((tmp_path / "progress.json").read_text())
    assert after[EPOCH_METRICS][0] == before[EPOCH_METRICS][0]
    assert [e["epoch"] for e in after[EPOCH_METRICS]] == [1, 2]
    _assert_epoch_entry(after[EPOCH_METRICS][1], 2)
    history = json.loads((tmp_path / "metrics.json").read_text())["history"]
    assert [set(entry["val"]) for entry in history] == [set(METRICS)] * 2


def test_point_metrics_on_a_hand_made_case():
    labels = np.array([1, 1, 0, 0])
    probs = np.array([0.9, 0.3, 0.35, 0.1])  # at 0.5: one true positive, one missed, two negatives

    got = point_metrics(labels, probs)

    assert got["accuracy"] == 0.75 and got["precision"] == 1.0 and got["recall"] == 0.5
    assert got["specificity"] == 1.0 and got["f1"] == pytest.approx(2 / 3)
    assert got["roc_auc"] == 0.75  # 3 of the 4 positive-negative pairs ranked right


def test_point_metrics_leave_roc_auc_undefined_with_one_class():
    got = point_metrics(np.array([0, 0, 0, 0]), np.array([0.1, 0.2, 0.7, 0.4]))

    assert got["roc_auc"] is None and got["accuracy"] == 0.75 and got["specificity"] == 0.75


def test_epoch_metrics_round_and_keep_undefined_values_out_of_the_json():
    history = [
        {"epoch": 1, "train_loss": 0.9, "val_loss": 0.123456789, "lr": 1e-3},  # an older run
        {"epoch": 2, "val_loss": float("nan"), "val": {"accuracy": 2 / 3, "roc_auc": None}},
    ]

    assert epoch_metrics(history) == [
        {"epoch": 1, "val_loss": 0.123457, "val": {}},
        {"epoch": 2, "val_loss": None, "val": {"accuracy": 0.666667, "roc_auc": None}},
    ]
