"""Sweeps from a terminal: a grid from a YAML file, its estimate, launched and followed until
every cell succeeded (exit 0), its leaderboard as a table and as the API's JSON; a grid too big
for the allocation exits 3 with the reason."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from portal.tokens.services import account_token_create

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(900)]

GRID_YAML = """\
grid:
  models: [resnet18]
  lrs: [0.001]
  lr_steps: [5]
  weight_decays: [0.0]
  folds: 2
  fixed: {epochs: 1, size: 32, batch_size: 8, bootstrap: 20, threads: 1}
params: {synthetic_n: 24}
concurrency: 2
wall_time_minutes: 10
name: cli grid
"""


def test_a_sweep_from_a_yaml_grid_runs_to_its_leaderboard(
    cli, monitor, local_allocation, researcher, tmp_path
):
    _, key = account_token_create(user=researcher)
    env = {"PORTAL_URL": cli.url, "PORTAL_TOKEN": key}
    grid = tmp_path / "grid.yaml"
    grid.write_text(GRID_YAML)
    allocation = str(local_allocation.pk)

    estimate = cli(
        "sweeps", "launch", "--allocation", allocation, "--grid", str(grid), "--estimate", **env
    )
    assert estimate.code == 0, estimate.err
    assert "2 cells" in estimate.out and "0.33 GPU-hours" in estimate.out  # 2 x 10 min (0.334)

    run = cli(
        "sweeps", "launch", "--allocation", allocation, "--grid", str(grid), "--follow", **env
    )
    assert run.code == 0, run.err + run.out
    assert "2/2 cells" in run.err and "Leaderboard" in run.out and "resnet18" in run.out
    sweep_id = int(run.err.split("Launched sweep ")[1].split(":")[0])

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    shown = cli("sweeps", "show", str(sweep_id), "--json", **env)
    assert shown.code == 0 and shown.json() == client.get(f"/api/v1/sweeps/{sweep_id}/").json()
    assert shown.json()["counts"]["succeeded"] == 2
    assert shown.json()["leaderboard"][0]["folds_done"] == 2
    table = cli("sweeps", "show", str(sweep_id), **env)
    assert "n=2" in table.out and "2/2" in table.out

    big = tmp_path / "big.yaml"
    big.write_text(
        GRID_YAML.replace("folds: 2", "folds: 20")
        .replace("synthetic_n: 24", "synthetic_n: 300")
        .replace("wall_time_minutes: 10", "wall_time_minutes: 60")
    )
    refused = cli("sweeps", "launch", "--allocation", allocation, "--grid", str(big), **env)
    assert refused.code == 3 and "Refused by the portal" in refused.err
    finished = cli("sweeps", "cancel", str(sweep_id), "--json", **env)
    assert finished.code == 3 and finished.json()["error"]["from"] == "finished"
