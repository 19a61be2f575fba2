"""Early stopping and search from a terminal (docs/sweeps.md): `portal sweeps launch`'s
`--early-stop/--eta/--min-epochs` and `--search/--trials/--seed/--budget-gpu-hours` fold into
the request's `grid` (only the keys given, over the grid file's own), options that mean nothing
without another are usage errors (exit 2) before anything is sent, and `portal sweeps show`
prints the cells stopped early and the GPU-hours they saved.

What the portal does with those keys is the launcher's to test (tests/launcher/). Here the body
the console script sends is read by a recording stand-in for the portal, so these tests say
exactly what goes over the wire; the usage errors run against the live portal, as the other
usage errors do (test_cli_loop.py)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from portal.tokens.services import account_token_create

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]
CLI = str(Path(__file__).resolve().parents[2] / "cli")  # this tree's portal_cli

GRID_YAML = """\
models: [resnet18, densenet121]
lrs: [0.001, 0.0001]
lr_steps: [5]
weight_decays: [0.0]
folds: 3
fixed: {epochs: 9}
"""

# As the API writes them: hours numbers, money decimal strings (docs/api.md, "Figures").
ESTIMATE = {
    "cells": 12,
    "per_cell_gpu_hours": 0.5,
    "total_gpu_hours": 6.0,
    "expected_gpu_hours": 2.3,
    "total_cost": "0.0000",
    "currency": "USD",
    "source": "wall-time",
    "basis": "12 cells x 0.500 GPU-hours per cell (1 GPU x 30 min wall time)",
    "remaining_gpu_hours": 10.0,
    "fits": True,
}

UNIT = {"key": "gpu", "singular": "GPU", "plural": "GPUs", "hours": "GPU-hours"}
ALLOCATION = {"id": 1, "unit": UNIT}  # what the figures' words are read from

SWEEP = {
    "id": 7,
    "allocation": 1,
    "name": "asha",
    "size": 12,
    "sort_by": "accuracy",
    "counts": {"succeeded": 3, "stopped_early": 9, "failed": 0},
    "schedule": {"saved_gpu_hours_estimate": 1.25},
    "leaderboard": [
        {
            "rank": 1,
            "model": "resnet18",
            "lr": 0.001,
            "lr_step": 5,
            "weight_decay": 0.0,
            "folds_done": 3,
            "folds_expected": 3,
            "rung": 2,
            "accuracy": {"mean": 0.81, "ci": [0.7, 0.9], "n": 3},
        },
        {
            "rank": 2,
            "model": "densenet121",
            "lr": 0.0001,
            "lr_step": 5,
            "weight_decay": 0.0,
            "folds_done": 3,
            "folds_expected": 3,
            "rung": 0,
            "accuracy": {"mean": 0.62, "ci": [0.5, 0.7], "n": 3},
        },
    ],
}


@pytest.fixture
def portal_stand_in():
    """A stand-in for the portal's API on a free port: answers the sweep estimate, a sweep's
    detail and its allocation with fixed objects, and records each request (method, path, JSON
    body)."""
    seen: list[tuple[str, str, object]] = []

    class Handler(BaseHTTPRequestHandler):
        def _answer(self, body: object) -> None:
            data = json.dumps(body).encode()
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            seen.append(("POST", self.path, json.loads(self.rfile.read(length) or b"null")))
            self._answer(ESTIMATE if self.path == "/api/v1/sweeps/estimate/" else None)

        def do_GET(self):
            seen.append(("GET", self.path, None))
            if self.path.startswith("/api/v1/sweeps/7/"):
                self._answer(SWEEP)
            else:
                self._answer(ALLOCATION if self.path == "/api/v1/allocations/1/" else None)

        def log_message(self, *args):  # quiet
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    server.seen = seen
    server.url = f"http://127.0.0.1:{server.server_address[1]}"
    yield server
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


def sent_grid(cli, stand_in, grid_file: Path, *options: str) -> dict:
    """The `grid` of the body `portal sweeps launch --estimate OPTIONS` sends."""
    env = {"PORTAL_URL": stand_in.url, "PORTAL_TOKEN": "stand-in", "PYTHONPATH": CLI}
    before = len(stand_in.seen)
    run = cli(
        "sweeps",
        "launch",
        "--allocation",
        "1",
        "--grid",
        str(grid_file),
        *options,
        "--estimate",
        **env,
    )
    assert run.code == 0, run.err + run.out
    # One POST; the GET of the allocation reads its unit for the printed words.
    (method, path, body), *rest = [s for s in stand_in.seen[before:] if s[0] == "POST"]
    assert (method, path, rest) == ("POST", "/api/v1/sweeps/estimate/", [])
    assert body["allocation"] == 1
    return body["grid"]


def test_the_options_fold_into_the_grid_with_only_the_keys_given(cli, portal_stand_in, tmp_path):
    grid_file = tmp_path / "grid.yaml"
    grid_file.write_text(GRID_YAML)
    plain = {
        "models": ["resnet18", "densenet121"],
        "lrs": [0.001, 0.0001],
        "lr_steps": [5],
        "weight_decays": [0.0],
        "folds": 3,
        "fixed": {"epochs": 9},
    }

    assert sent_grid(cli, portal_stand_in, grid_file) == plain  # nothing asked, nothing added
    assert sent_grid(cli, portal_stand_in, grid_file, "--early-stop", "asha") == {
        **plain,
        "early_stopping": {"method": "asha", "eta": 3, "min_epochs": 1},
    }
    staged = sent_grid(
        cli,
        portal_stand_in,
        grid_file,
        "--early-stop",
        "asha",
        "--eta",
        "4",
        "--min-epochs",
        "2",
        "--search",
        "tpe",
        "--trials",
        "40",
        "--seed",
        "11",
        "--budget-gpu-hours",
        "7.5",
    )
    assert staged == {
        **plain,
        "early_stopping": {"method": "asha", "eta": 4, "min_epochs": 2},
        "search": {"strategy": "tpe", "trials": 40, "seed": 11, "gpu_hours": 7.5},
    }
    assert sent_grid(cli, portal_stand_in, grid_file, "--search", "random", "--trials", "8") == {
        **plain,
        "search": {"strategy": "random", "trials": 8},
    }
    assert sent_grid(cli, portal_stand_in, grid_file, "--search", "grid") == {
        **plain,
        "search": {"strategy": "grid"},
    }

    # The CLAIRE preset with ranges from a file: the options go beside them, the file's own
    # early stopping (ASHA when it names no method, as the portal reads it) and search are
    # kept where no option overrides them.
    preset = tmp_path / "claire.yaml"
    preset.write_text(
        "grid:\n"
        "  preset: claire\n"
        "  lrs: {min: 1.0e-5, max: 0.1, log: true}\n"
        "  early_stopping: {eta: 2, min_epochs: 3}\n"
        "  search: {strategy: random, trials: 20, seed: 5}\n"
        "concurrency: 4\n"
    )
    claire = {"preset": "claire", "lrs": {"min": 1.0e-5, "max": 0.1, "log": True}}
    assert sent_grid(cli, portal_stand_in, preset, "--eta", "3", "--search", "tpe") == {
        **claire,
        "early_stopping": {"method": "asha", "eta": 3, "min_epochs": 3},
        "search": {"strategy": "tpe", "trials": 20, "seed": 5},
    }
    assert sent_grid(cli, portal_stand_in, preset, "--early-stop", "none", "--trials", "40") == {
        **claire,
        "search": {"strategy": "random", "trials": 40, "seed": 5},
    }


def test_the_estimate_gives_the_worst_and_the_expected_case(cli, portal_stand_in, tmp_path):
    grid_file = tmp_path / "grid.yaml"
    grid_file.write_text(GRID_YAML)
    env = {"PORTAL_URL": portal_stand_in.url, "PORTAL_TOKEN": "stand-in", "PYTHONPATH": CLI}
    run = cli(
        "sweeps",
        "launch",
        "--allocation",
        "1",
        "--grid",
        str(grid_file),
        "--early-stop",
        "asha",
        "--estimate",
        **env,
    )
    assert run.code == 0, run.err
    assert "12 cells, 6.00 GPU-hours at most, 2.30 expected" in run.out


def test_show_prints_the_cells_stopped_early_their_rung_and_the_saving(cli, portal_stand_in):
    env = {"PORTAL_URL": portal_stand_in.url, "PORTAL_TOKEN": "stand-in", "PYTHONPATH": CLI}
    shown = cli("sweeps", "show", "7", **env)
    assert shown.code == 0, shown.err
    assert "succeeded 3  stopped_early 9" in shown.out
    header = next(line for line in shown.out.splitlines() if "rank" in line)
    assert header.index("folds") < header.index("rung") < header.index("accuracy")
    assert "Early stopping saved about 1.25 GPU-hours" in shown.out


def test_options_that_need_another_are_usage_errors(cli, local_allocation, researcher, tmp_path):
    _, key = account_token_create(user=researcher)
    env = {"PORTAL_URL": cli.url, "PORTAL_TOKEN": key, "PYTHONPATH": CLI, "COLUMNS": "200"}
    grid_file = tmp_path / "grid.yaml"
    grid_file.write_text(GRID_YAML)
    launch = (
        "sweeps",
        "launch",
        "--allocation",
        str(local_allocation.pk),
        "--grid",
        str(grid_file),
    )

    for options, hint, message in (
        (["--eta", "4"], "--eta", "add --early-stop asha"),
        (["--min-epochs", "2", "--early-stop", "none"], "--min-epochs", "add --early-stop asha"),
        (["--trials", "40"], "--trials", "--search random or --search tpe"),
        (["--search", "grid", "--trials", "40"], "--trials", "--search random or --search tpe"),
        (["--seed", "3"], "--seed", "--search random or --search tpe"),
        (["--budget-gpu-hours", "5", "--search", "grid"], "--budget-gpu-hours", "random or"),
        (["--early-stop", "sometimes"], "--early-stop", "'sometimes' is not one of"),
        (["--search", "bayes"], "--search", "'bayes' is not one of"),
    ):
        refused = cli(*launch, *options, **env)
        assert refused.code == 2, (options, refused.err)
        assert hint in refused.err and message in refused.err, (options, refused.err)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert api.get("/api/v1/sweeps/").json()["count"] == 0  # nothing launched
