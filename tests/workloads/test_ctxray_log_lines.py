"""The trainer writes each progress report as a line of its own output (stderr), which is what the
job's log shows while the run goes on; stdout keeps its one JSON summary."""

import json
import re

from launcher.workloads.ctxray import TrainConfig, trainer
from launcher.workloads.ctxray.progress import log_line

CLOCK = r"^\d\d:\d\d:\d\d "


def _report(**fields):
    return {"epoch": 3, "epochs": 8, "step": 10, "steps_per_epoch": 15, "loss": None, **fields}


def test_each_kind_of_report_reads_as_one_plain_line():
    running = _report(state="running", loss=0.693147, images_per_s=12.44, eta_s=40.4)
    assert re.match(
        CLOCK + r"epoch 3/8 step 10/15: loss 0\.6931, 12\.4 images/s, about 40 s of training left$",
        log_line(running),
    )
    assert re.match(CLOCK + r"epoch 3/8: training$", log_line(_report(state="running")))
    assert log_line(_report(state="validating", loss=0.5)).endswith(
        "epoch 3/8: validating (training loss 0.5000)"
    )
    assert log_line(_report(state="running", loss=0.5, val_loss=0.61)).endswith(
        "epoch 3/8 done: training loss 0.5000, validation loss 0.6100"
    )
    assert log_line(
        _report(state="succeeded", loss=0.5, val_loss=0.6, stopped_early=True)
    ).endswith(
        "finished at epoch 3/8 (stopped early: no better validation loss): validation loss 0.6000"
    )
    assert log_line(_report(state="preempted")).endswith(
        "stopped at epoch 3/8, step 10: checkpoint saved, a resume continues here"
    )


def test_a_training_run_prints_its_progress_to_stderr_leaving_stdout_to_the_summary(
    ct_slices, tmp_path, capsys
):
    cfg = TrainConfig(
        data=str(ct_slices),
        out=str(tmp_path),
        model="resnet18",
        epochs=2,
        size=32,
        batch_size=8,
        bootstrap=0,
        progress_every=1,
        threads=1,
    )
    trainer.train(cfg)

    out, err = capsys.readouterr()
    assert out == ""  # the command's one JSON summary stays the last line of stdout
    err = err.splitlines()
    assert all(re.match(CLOCK, line) for line in err), err
    said = [line[9:] for line in err]
    assert said[0] == "epoch 1/2: training"
    assert any(re.fullmatch(r"epoch 1/2 step \d+/\d+: loss \d\.\d{4}.*", s) for s in said)
    assert any(s.startswith("epoch 1/2 done: training loss ") for s in said)
    assert said[-1].startswith("finished at epoch 2/2: validation loss ")
    progress = json.loads((tmp_path / "progress.json").read_text())
    assert progress["state"] == "succeeded"
