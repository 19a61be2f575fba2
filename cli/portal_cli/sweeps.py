"""`portal sweeps launch|show|cancel`."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from .client import OK, REFUSED
from .common import JsonOpt, client
from .follow import follow_sweep, sweep_outcome
from .output import err, print_json, show_estimate, table

app = typer.Typer(help="Sweeps (grids of training runs): launch (and follow), show, cancel.",
                  no_args_is_help=True)

BODY_KEYS = ("grid", "params", "gpus", "wall_time_minutes", "concurrency", "name")


def read_grid(path: Path) -> dict[str, Any]:
    """A YAML (or JSON) file holding either the grid itself ({models, lrs, lr_steps,
    weight_decays, folds, fixed} or {preset: claire}) or a sweep body ({grid, params, gpus,
    wall_time_minutes, concurrency, name})."""
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as error:
        raise typer.BadParameter(f"cannot read {path}: {error}", param_hint="--grid") from None
    if not isinstance(data, dict):
        raise typer.BadParameter(f"{path} must hold a mapping (the grid or a sweep body)",
                                 param_hint="--grid")
    if "grid" in data:
        unknown = set(data) - set(BODY_KEYS)
        if unknown:
            raise typer.BadParameter(f"unknown keys in {path}: {', '.join(sorted(unknown))}",
                                     param_hint="--grid")
        return dict(data)
    return {"grid": data}


@app.command()
def launch(
    allocation: Annotated[int, typer.Option(help="The allocation to run on.")],
    grid: Annotated[Path, typer.Option(help="YAML file: the grid, or a whole sweep body (docs/cli.md).")],
    gpus: Annotated[int | None, typer.Option(help="GPUs per cell.")] = None,
    wall_time: Annotated[int | None, typer.Option(help="Wall time per cell, minutes.")] = None,
    concurrency: Annotated[int | None, typer.Option(help="Cells at once.")] = None,
    name: Annotated[str | None, typer.Option()] = None,
    estimate: Annotated[bool, typer.Option("--estimate", help="Show what it would reserve; launch nothing.")] = False,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Draw cells done until all end; exit 0 "
                                                                 "if every cell succeeded, else 1.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Launch a sweep: one training run per cell of the grid."""
    body = read_grid(grid)
    body["allocation"] = allocation
    for key, value in (("gpus", gpus), ("wall_time_minutes", wall_time),
                       ("concurrency", concurrency), ("name", name)):
        if value is not None:
            body[key] = value
    api = client()
    if estimate:
        found = api.post("sweeps/estimate/", body)
        show_estimate(found, f"{found['cells']} cells, {found['total_gpu_hours']} GPU-hours, "
                             f"{found['total_cost']} {found['currency']}", as_json=as_json)
        raise typer.Exit(OK if found["fits"] else REFUSED)
    sweep = api.post("sweeps/", body)
    if not follow:
        print_json(sweep) if as_json else typer.echo(
            f"sweep {sweep['id']}: {sweep['size']} cells, estimate {sweep['estimate_gpu_hours']} "
            f"GPU-hours; {api.settings.url}{sweep['url']}")
        return
    if not as_json:
        err.print(f"Launched sweep {sweep['id']}: {sweep['size']} cells; {api.settings.url}{sweep['url']}",
                  highlight=False)
    final = follow_sweep(api, sweep["id"])
    print_json(final) if as_json else _board(final)
    raise typer.Exit(sweep_outcome(final))


def _metric(cell: Any) -> str:
    if not isinstance(cell, dict) or cell.get("mean") is None:
        return "-"
    ci = cell.get("ci")
    interval = f" [{ci[0]:.3f}, {ci[1]:.3f}]" if isinstance(ci, (list, tuple)) and len(ci) == 2 else ""
    return f"{cell['mean']:.3f}{interval} n={cell.get('n', 0)}"


def _board(sweep: dict) -> None:
    counts = "  ".join(f"{k} {v}" for k, v in (sweep.get("counts") or {}).items() if v)
    typer.echo(f"sweep {sweep['id']} {sweep.get('name') or ''}: {sweep['size']} cells ({counts})")
    metric = sweep.get("sort_by") or "accuracy"
    table(f"Leaderboard (by {metric}, mean and 95% interval over folds)",
          ["rank", "model", "lr", "lr_step", "weight_decay", "folds", metric, "roc_auc"],
          [(r["rank"], r["model"], r["lr"], r["lr_step"], r["weight_decay"],
            f"{r['folds_done']}/{r['folds_expected']}", _metric(r.get(metric)), _metric(r.get("roc_auc")))
           for r in sweep.get("leaderboard") or []])


@app.command()
def show(sweep: Annotated[int, typer.Argument(help="The sweep's id.")],
         sort_by: Annotated[str | None, typer.Option(help="accuracy, precision, recall, "
                                                             "specificity, f1 or roc_auc.")] = None,
         as_json: JsonOpt = False) -> None:
    """A sweep's cells by state and its leaderboard."""
    data = client().get(f"sweeps/{sweep}/", sort_by=sort_by)
    print_json(data) if as_json else _board(data)


@app.command()
def cancel(sweep: Annotated[int, typer.Argument(help="The sweep's id.")], as_json: JsonOpt = False) -> None:
    """Cancel every unfinished cell."""
    data = client().post(f"sweeps/{sweep}/cancel/")
    print_json(data) if as_json else typer.echo(f"sweep {data['id']}: {data['cancelled']} cells cancelled")
