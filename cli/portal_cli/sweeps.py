"""`portal sweeps launch|show|cancel`."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from .client import OK, REFUSED
from .common import GPU_UNIT, JsonOpt, client, unit_of
from .follow import follow_sweep, sweep_outcome
from .output import err, hours, print_json, show_estimate, table

app = typer.Typer(
    rich_markup_mode="markdown",
    help="Sweeps (grids of training runs): launch (and follow), show, cancel.",
    no_args_is_help=True,
)

BODY_KEYS = ("grid", "params", "gpus", "wall_time_minutes", "concurrency", "name")
# What `--early-stop asha` sends when neither the command line nor the grid file says more.
ASHA_DEFAULTS = {"eta": 3, "min_epochs": 1}


class EarlyStop(str, Enum):
    asha = "asha"
    none = "none"


class Search(str, Enum):
    grid = "grid"
    random = "random"
    tpe = "tpe"


def read_grid(path: Path) -> dict[str, Any]:
    """A YAML (or JSON) file holding either the grid itself ({models, lrs, lr_steps,
    weight_decays, folds, fixed} or {preset: claire}) or a sweep body ({grid, params, gpus,
    wall_time_minutes, concurrency, name})."""
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as error:
        raise typer.BadParameter(f"cannot read {path}: {error}", param_hint="--grid") from None
    if not isinstance(data, dict):
        raise typer.BadParameter(
            f"{path} must hold a mapping (the grid or a sweep body)", param_hint="--grid"
        )
    if "grid" in data:
        unknown = set(data) - set(BODY_KEYS)
        if unknown:
            raise typer.BadParameter(
                f"unknown keys in {path}: {', '.join(sorted(unknown))}", param_hint="--grid"
            )
        return dict(data)
    return {"grid": data}


def _given(**options: Any) -> dict[str, Any]:
    return {key: value for key, value in options.items() if value is not None}


def _hint(options: dict[str, Any]) -> str:
    """The command line's names of the given options (the body's `gpu_hours` is the budget)."""
    names = {"gpu_hours": "budget_gpu_hours"}
    return "/".join(f"--{names.get(key, key).replace('_', '-')}" for key in options)


def fold_staging(
    grid: Any,
    *,
    early_stop: EarlyStop | None = None,
    eta: int | None = None,
    min_epochs: int | None = None,
    search: Search | None = None,
    trials: int | None = None,
    seed: int | None = None,
    budget_gpu_hours: float | None = None,
) -> Any:
    """The grid with the command line's early-stopping and search options folded in, over
    what the grid file says: `early_stopping` {method, eta, min_epochs} and `search`
    {strategy, trials, seed, gpu_hours}, only the keys given (docs/sweeps.md). Options that
    mean nothing without another (`--eta` without ASHA; `--trials`, `--seed` or a budget
    without a random or TPE search, which alone draws configurations) are usage errors here,
    before anything is sent."""
    rungs = _given(eta=eta, min_epochs=min_epochs)
    searching = _given(trials=trials, seed=seed, gpu_hours=budget_gpu_hours)
    if early_stop is None and search is None and not rungs and not searching:
        return grid  # nothing asked: the file's grid goes as it is
    if not isinstance(grid, dict):
        raise typer.BadParameter(
            "the grid must be a mapping to add options to", param_hint="--grid"
        )
    grid = dict(grid)
    stopping = grid.get("early_stopping")
    # The portal reads an `early_stopping` without a method as ASHA's.
    stopping = {"method": "asha", **stopping} if isinstance(stopping, dict) else {}
    method = early_stop.value if early_stop is not None else stopping.get("method")
    if rungs and method != "asha":
        raise typer.BadParameter(
            "the rungs belong to ASHA early stopping: add --early-stop asha",
            param_hint=_hint(rungs),
        )
    if early_stop is EarlyStop.none:
        grid.pop("early_stopping", None)  # absent: every cell runs to the end
    elif method == "asha" and (early_stop is not None or rungs):
        kept = stopping if stopping.get("method") == "asha" else {}
        grid["early_stopping"] = {"method": "asha", **ASHA_DEFAULTS, **kept, **rungs}
    found = grid.get("search")
    chosen = dict(found) if isinstance(found, dict) else {}
    strategy = search.value if search is not None else chosen.get("strategy")
    if searching and strategy not in ("random", "tpe"):
        raise typer.BadParameter(
            "a grid runs every combination once; this is for --search random or --search tpe",
            param_hint=_hint(searching),
        )
    if search is not None or searching:
        grid["search"] = {**chosen, **_given(strategy=strategy), **searching}
    return grid


@app.command()
def launch(
    allocation: Annotated[int, typer.Option(help="The allocation to run on.")],
    grid: Annotated[
        Path, typer.Option(help="YAML file: the grid, or a whole sweep body (docs/cli.md).")
    ],
    gpus: Annotated[
        int | None, typer.Option(help="GPUs per cell (CPUs on a facility without GPUs).")
    ] = None,
    wall_time: Annotated[
        int | None,
        typer.Option(
            help="Wall time per cell, minutes (default: the first cell's predicted run time x 3, "
            "at least 30)."
        ),
    ] = None,
    concurrency: Annotated[int | None, typer.Option(help="Cells at once.")] = None,
    name: Annotated[str | None, typer.Option()] = None,
    early_stop: Annotated[
        EarlyStop | None,
        typer.Option(
            help="asha: stop configurations outside the top 1/eta at each rung; "
            "none: every cell runs to the end (the default)."
        ),
    ] = None,
    eta: Annotated[
        int | None,
        typer.Option(
            help="ASHA: keep the top 1/ETA at each rung; rungs at MIN_EPOCHS x ETA^k epochs "
            "(default 3)."
        ),
    ] = None,
    min_epochs: Annotated[
        int | None, typer.Option(help="ASHA: epochs at the first rung (default 1).")
    ] = None,
    search: Annotated[
        Search | None,
        typer.Option(help="grid: every combination (the default); random or tpe: --trials draws."),
    ] = None,
    trials: Annotated[
        int | None, typer.Option(help="random/tpe: how many configurations to try.")
    ] = None,
    seed: Annotated[
        int | None, typer.Option(help="random/tpe: the sampler's seed (default 0).")
    ] = None,
    budget_gpu_hours: Annotated[
        float | None,
        typer.Option(
            help="random/tpe: draw no more configurations once what the search ran and "
            "reserves would pass this."
        ),
    ] = None,
    estimate: Annotated[
        bool, typer.Option("--estimate", help="Show what it would reserve; launch nothing.")
    ] = False,
    follow: Annotated[
        bool,
        typer.Option(
            "--follow",
            "-f",
            help="Draw cells done until all end; exit 0 if every cell succeeded, else 1.",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Launch a sweep: a grid, or a random or TPE search, with or without ASHA early stopping
    (docs/sweeps.md); one training run per configuration and fold."""
    body = read_grid(grid)
    body["grid"] = fold_staging(
        body["grid"],
        early_stop=early_stop,
        eta=eta,
        min_epochs=min_epochs,
        search=search,
        trials=trials,
        seed=seed,
        budget_gpu_hours=budget_gpu_hours,
    )
    body["allocation"] = allocation
    for key, value in (
        ("gpus", gpus),
        ("wall_time_minutes", wall_time),
        ("concurrency", concurrency),
        ("name", name),
    ):
        if value is not None:
            body[key] = value
    api = client()
    if estimate:
        found = api.post("sweeps/estimate/", body)
        unit = GPU_UNIT if as_json else unit_of(api, allocation)
        show_estimate(found, _estimate_headline(found, unit), as_json=as_json, unit=unit)
        raise typer.Exit(OK if found["fits"] else REFUSED)
    sweep = api.post("sweeps/", body)
    if not follow:
        print_json(sweep) if as_json else typer.echo(
            f"sweep {sweep['id']}: {sweep['size']} cells, estimate "
            f"{hours(sweep['estimate_gpu_hours'])} {unit_of(api, allocation)['hours']}; "
            f"{api.settings.url}{sweep['url']}"
        )
        return
    if not as_json:
        err.print(
            f"Launched sweep {sweep['id']}: {sweep['size']} cells; {api.settings.url}{sweep['url']}",
            highlight=False,
        )
    final = follow_sweep(api, sweep["id"])
    print_json(final) if as_json else _board(final, unit_of(api, allocation))
    raise typer.Exit(sweep_outcome(final))


def _estimate_headline(found: dict[str, Any], unit: dict[str, Any]) -> str:
    """Cells, hours (in the allocation's unit) and money; a staged sweep's total is its worst
    case (every cell to the end), so its expected case from the rung schedule follows it."""
    expected = found.get("expected_gpu_hours")
    total = f"{hours(found['total_gpu_hours'])} {unit['hours']}"
    if expected is not None:
        total += f" at most, {hours(expected)} expected"
    return f"{found['cells']} cells, {total}, {found['total_cost']} {found['currency']}"


def _metric(cell: Any) -> str:
    if not isinstance(cell, dict) or cell.get("mean") is None:
        return "-"
    ci = cell.get("ci")
    interval = (
        f" [{ci[0]:.3f}, {ci[1]:.3f}]" if isinstance(ci, (list, tuple)) and len(ci) == 2 else ""
    )
    return f"{cell['mean']:.3f}{interval} n={cell.get('n', 0)}"


def _board(sweep: dict, unit: dict[str, Any]) -> None:
    counts = "  ".join(f"{k} {v}" for k, v in (sweep.get("counts") or {}).items() if v)
    typer.echo(f"sweep {sweep['id']} {sweep.get('name') or ''}: {sweep['size']} cells ({counts})")
    metric = sweep.get("sort_by") or "accuracy"
    rows = sweep.get("leaderboard") or []
    # An early-stopping sweep's rows carry the furthest rung each configuration reached.
    rungs = any(r.get("rung") is not None for r in rows)
    table(
        f"Leaderboard (by {metric}, mean and 95% interval over folds)",
        ["rank", "model", "lr", "lr_step", "weight_decay", "folds", *(["rung"] if rungs else [])]
        + [metric, "roc_auc"],
        [
            (
                r["rank"],
                r["model"],
                r["lr"],
                r["lr_step"],
                r["weight_decay"],
                f"{r['folds_done']}/{r['folds_expected']}",
                *([r.get("rung")] if rungs else []),
                _metric(r.get(metric)),
                _metric(r.get("roc_auc")),
            )
            for r in rows
        ],
    )
    saved = (sweep.get("schedule") or {}).get("saved_gpu_hours_estimate")
    if saved:
        typer.echo(
            f"Early stopping saved about {hours(saved)} {unit['hours']} (an estimate: the epochs "
            "not run x "
            "each configuration's measured seconds per epoch)."
        )


@app.command()
def show(
    sweep: Annotated[int, typer.Argument(help="The sweep's id.")],
    sort_by: Annotated[
        str | None, typer.Option(help="accuracy, precision, recall, specificity, f1 or roc_auc.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """A sweep's cells by state and its leaderboard."""
    api = client()
    data = api.get(f"sweeps/{sweep}/", sort_by=sort_by)
    print_json(data) if as_json else _board(data, unit_of(api, data["allocation"]))


@app.command()
def cancel(
    sweep: Annotated[int, typer.Argument(help="The sweep's id.")], as_json: JsonOpt = False
) -> None:
    """Cancel every unfinished cell."""
    data = client().post(f"sweeps/{sweep}/cancel/")
    print_json(data) if as_json else typer.echo(
        f"sweep {data['id']}: {data['cancelled']} cells cancelled"
    )
