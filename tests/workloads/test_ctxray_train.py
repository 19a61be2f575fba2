"""Training end to end: it learns the synthetic findings, writes progress and metrics, resumes
after a real SIGTERM to the same result, and refuses bad arguments with one clear line."""

import contextlib
import json
import os
import signal
import subprocess
import sys
import time

import pytest
import torch

from launcher.workloads.ctxray import EXIT_PREEMPTED, TrainConfig, train
from launcher.workloads.ctxray.cli import main
from launcher.workloads.ctxray.synth import synthesize

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SMALL = [
    "--model",
    "resnet18",
    "--epochs",
    "3",
    "--size",
    "32",
    "--batch-size",
    "8",
    "--lr",
    "1e-3",
    "--deterministic",
    "--bootstrap",
    "50",
    "--progress-every",
    "1",
    "--seed",
    "1",
]


def test_a_short_training_learns_the_synthetic_findings(ct_learnable, tmp_path):
    # Seeded and deterministic, so one machine gives one result; the bounds hold for every seed
    # tried (0-11: accuracy 0.81-0.91, ROC AUC 0.83-0.98 over 42 slices), since another
    # processor's arithmetic is in effect another seed.
    cfg = TrainConfig(
        data=str(ct_learnable),
        out=str(tmp_path),
        model="resnet18",
        epochs=8,
        size=32,
        batch_size=16,
        lr=1e-3,
        lr_step=5,
        bootstrap=200,
        seed=0,
        deterministic=True,
    )
    result = train(cfg)
    assert result.status == "succeeded" and result.exit_code == 0
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["evaluated_on"] == "val" and metrics["synthetic_data"] is True
    accuracy = metrics["slice"]["accuracy"]
    assert accuracy["value"] >= 0.7 and accuracy["ci"][0] > 0.5  # better than chance (0.5)
    assert metrics["slice"]["roc_auc"]["value"] >= 0.75
    for level in ("slice", "patient"):
        for name in ("accuracy", "precision", "recall", "specificity", "f1", "roc_auc"):
            entry = metrics[level][name]
            assert entry["ci"][0] <= entry["value"] <= entry["ci"][1]
    assert metrics["patient"]["n"] * 3 == metrics["slice"]["n"]
    assert (
        sum(sum(r) for r in metrics["slice"]["confusion_matrix"]["rows_true_cols_pred"])
        == metrics["slice"]["n"]
    )
    assert metrics["slice"]["roc"]["fpr"][0] == 0.0 and metrics["slice"]["roc"]["tpr"][-1] == 1.0
    progress = json.loads((tmp_path / "progress.json").read_text())
    assert progress["state"] == "succeeded" and progress["epoch"] == 8 and progress["eta_s"] == 0.0


def _run_cli(args, **kw):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": REPO}
    return subprocess.Popen(
        [sys.executable, "-m", "launcher.workloads.ctxray", *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,
    )


def _wait_for_progress(path, proc, predicate):
    seen = []
    while proc.poll() is None:  # bounded by the process itself, not by a timer
        with contextlib.suppress(FileNotFoundError, json.JSONDecodeError):
            seen.append(json.loads(path.read_text()))  # written atomically: whole or absent
        if seen and predicate(seen[-1]):
            return seen
        time.sleep(0.02)
    raise AssertionError(f"process ended before the awaited progress: {proc.communicate()}")


def test_sigterm_checkpoints_and_resume_matches_an_uninterrupted_run(ct_slices, tmp_path):
    full, cut = tmp_path / "full", tmp_path / "cut"
    ref = _run_cli(["train", "--data", str(ct_slices), "--out", str(full), *SMALL])
    proc = _run_cli(["train", "--data", str(ct_slices), "--out", str(cut), *SMALL])
    seen = _wait_for_progress(
        cut / "progress.json", proc, lambda p: p["state"] == "running" and p["step"] >= 1
    )
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate()
    assert proc.returncode == EXIT_PREEMPTED, err
    assert "--resume" in err and "Traceback" not in err
    stopped = json.loads((cut / "progress.json").read_text())
    assert stopped["state"] == "preempted" and (cut / "checkpoint.pt").exists()
    assert (stopped["epoch"], stopped["step"]) < (3, 4) and not (cut / "metrics.json").exists()
    assert seen[-1]["steps_per_epoch"] == 4 and seen[-1]["epochs"] == 3

    resumed = _run_cli(["train", "--data", str(ct_slices), "--out", str(cut), "--resume", *SMALL])
    _, err = resumed.communicate()
    assert resumed.returncode == 0, err
    # The trainer's log and progress.json speak the same (1-based) epoch and the steps done in it.
    assert (
        f"resumed from the checkpoint in {cut} at epoch {stopped['epoch']} of 3, "
        f"step {stopped['step']}\n"
    ) in err, err
    assert ref.wait() == 0, ref.communicate()
    a, b = (json.loads((d / "metrics.json").read_text()) for d in (full, cut))
    assert (
        a["history"] == b["history"] and a["slice"] == b["slice"] and a["patient"] == b["patient"]
    )
    wa, wb = (torch.load(d / "best.pt", weights_only=True)["model"] for d in (full, cut))
    assert all(torch.equal(wa[k], wb[k]) for k in wa)


def test_a_second_run_into_a_used_folder_needs_resume(ct_slices, tmp_path, capsys):
    args = ["train", "--data", str(ct_slices), "--out", str(tmp_path), *SMALL, "--epochs", "1"]
    assert main(args) == 0
    assert main(args) == 2
    assert "pass --resume" in capsys.readouterr().err
    assert main([*args, "--resume"]) == 0  # already finished: re-evaluates, changes nothing
    assert main([*args, "--resume", "--lr", "0.01"]) == 2
    assert "cannot resume" in capsys.readouterr().err


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--data", "/nonexistent/data"], "data not found: /nonexistent/data"),
        (["--model", "alexnet"], "unknown model 'alexnet'"),
        (["--fold", "3", "--folds", "3"], "--fold must be in 0..2"),
    ],
)
def test_bad_arguments_fail_with_one_clear_line(ct_slices, tmp_path, capsys, extra, message):
    assert main(["train", "--data", str(ct_slices), "--out", str(tmp_path), *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_malformed_values_are_argparse_errors_on_one_line(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "--data", "d", "--out", "o", "--epochs", "zero"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "invalid int value: 'zero'" in err and len(err.strip().splitlines()) == 1


def test_one_class_data_is_refused_by_the_command(tmp_path):
    synthesize(str(tmp_path / "d"), "xray", n=6, size=32, seed=0)
    for f in (tmp_path / "d" / "covid").iterdir():
        f.rename(tmp_path / "d" / "negative" / f.name)
    proc = _run_cli(
        ["train", "--data", str(tmp_path / "d"), "--out", str(tmp_path / "o"), "--size", "32"]
    )
    _, err = proc.communicate()
    assert proc.returncode == 2
    assert (
        err.strip().startswith("ctxray: error:")
        and "only class [0]" in err
        and "Traceback" not in err
    )


def test_cross_validation_folds_partition_patients(ct_slices):
    from launcher.workloads.ctxray.dataset import make_splits
    from launcher.workloads.ctxray.sources import discover

    items = discover(str(ct_slices)).items
    vals = []
    for fold in range(4):
        splits = make_splits(items, TrainConfig(data=str(ct_slices), out="", folds=4, fold=fold))
        assert not {i.patient for i in splits.train} & {i.patient for i in splits.val}
        vals.append({i.patient for i in splits.val})
    assert set().union(*vals) == {i.patient for i in items} and sum(map(len, vals)) == 16
