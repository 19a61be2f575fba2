"""`portal jobs launch|list|show|logs|cancel`."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from .client import OK, REFUSED
from .common import GPU_UNIT, JsonOpt, client, size, sized_table, unit_of
from .follow import follow_job, follow_log, gpu_hours_so_far, job_detail, outcome
from .output import err, hours, print_json, say, show_estimate, table

app = typer.Typer(
    rich_markup_mode="markdown",
    help="Training jobs: launch (and follow), list, show, logs, cancel.",
    no_args_is_help=True,
)


def parse_params(pairs: list[str]) -> dict:
    """`--param key=value` pairs; a value that reads as JSON (numbers, true) is taken as such."""
    params = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"{pair!r}: write key=value", param_hint="--param")
        try:
            params[key] = json.loads(value)
        except ValueError:
            params[key] = value
    return params


def allocation_ref(value: str) -> int | str:
    """`--allocation`: an allocation's id, or "auto" (placement chooses: docs/placement.md)."""
    if value == "auto":
        return value
    try:
        return int(value)
    except ValueError:
        raise typer.BadParameter(
            f"{value!r}: give an allocation's id or auto", param_hint="--allocation"
        ) from None


def show_placement(placement: dict) -> None:
    """The ranking POST placements/ answered (or a placed job keeps): one row per allocation."""
    table(
        "Placement",
        ["rank", "allocation", "facility", "wait", "finish", "cost", "why"],
        [
            (
                o["rank"],
                o["allocation"],
                o["label"],
                _minutes(o["wait"]["seconds"]) if o["wait"] else None,
                (o["finish_at"] or "")[11:16],
                f"{o['cost']} {o['currency']}" if o["eligible"] else None,
                o["reason"],
            )
            for o in placement["options"]
        ],
    )


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 90 else f"{seconds:.0f} s"


@app.command()
def launch(
    allocation: Annotated[
        str,
        typer.Option(
            help="The allocation to run on (see `portal allocations`), or auto: the one of "
            "yours predicted to finish it first (--prefer cost: the cheapest)."
        ),
    ],
    prefer: Annotated[
        str, typer.Option(help="With --allocation auto: finish (default) or cost.")
    ] = "finish",
    gpus: Annotated[
        int | None, typer.Option(help="GPUs, or CPUs on a facility without GPUs (default 1).")
    ] = None,
    wall_time: Annotated[
        int | None,
        typer.Option(
            help="Wall time in minutes, where the run is stopped (default: 3x the predicted run "
            "time, at least 30; 60 without a prediction). The launch reserves wall time x GPUs; "
            "the run is charged what it uses."
        ),
    ] = None,
    model: Annotated[str | None, typer.Option(help="densenet121, resnet18, ...")] = None,
    epochs: Annotated[int | None, typer.Option()] = None,
    dataset: Annotated[
        str | None,
        typer.Option(
            help="synthetic-ct, synthetic-xray, or one of the project's datasets by id or name."
        ),
    ] = None,
    batch_size: Annotated[int | None, typer.Option()] = None,
    lr: Annotated[float | None, typer.Option()] = None,
    seed: Annotated[int | None, typer.Option()] = None,
    param: Annotated[
        list[str] | None,
        typer.Option(help="Any other train parameter, key=value (repeatable; docs/workload.md)."),
    ] = None,
    estimate: Annotated[
        bool,
        typer.Option(
            "--estimate",
            help="Show what the launch would reserve and whether it fits; launch nothing.",
        ),
    ] = False,
    follow: Annotated[
        bool,
        typer.Option(
            "--follow",
            "-f",
            help="Draw its progress until it ends; exit 0 if it succeeded, 1 if not.",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Launch a training job (the default job unless you say otherwise)."""
    params = parse_params(param or [])
    for key, value in (
        ("model", model),
        ("epochs", epochs),
        ("dataset", dataset),
        ("batch_size", batch_size),
        ("lr", lr),
        ("seed", seed),
    ):
        if value is not None:
            params[key] = value
    ref = allocation_ref(allocation)
    body: dict = {"allocation": ref, "params": params}
    if ref == "auto":
        body["prefer"] = prefer
    if gpus is not None:
        body["gpus"] = gpus
    if wall_time is not None:
        body["wall_time_minutes"] = wall_time
    api = client()
    if estimate and ref == "auto":  # the ranking itself: where it would go, and why
        ranked = api.post("placements/", {k: v for k, v in body.items() if k != "allocation"})
        if as_json:
            print_json(ranked)
        else:
            show_placement(ranked)
            typer.echo(ranked["summary"])
        raise typer.Exit(OK if ranked["chosen"] is not None else REFUSED)
    if estimate:
        found = api.post("jobs/estimate/", body)
        unit = GPU_UNIT if as_json else unit_of(api, int(ref))
        show_estimate(
            found,
            f"{hours(found['gpu_hours'])} {unit['hours']}, {found['cost']} {found['currency']}",
            as_json=as_json,
            unit=unit,
        )
        raise typer.Exit(OK if found["fits"] else REFUSED)
    job = api.post("jobs/", body)
    if job.get("placement") and not as_json:
        err.print(job["placement"]["summary"], highlight=False)
    if as_json and not follow:
        print_json(job)
        return
    unit = unit_of(api, job["allocation"])
    if not follow:
        _summary(job, api.settings.url, unit)
        return
    if not as_json:
        err.print(
            f"Launched job {job['id']}: estimate {hours(job['estimate_gpu_hours'])} "
            f"{unit['hours']} ({job['estimate_source']}); {api.settings.url}{job['url']}",
            highlight=False,
        )
    final = follow_job(api, job["id"], unit)
    print_json(final) if as_json else _summary(final, api.settings.url, unit)
    raise typer.Exit(outcome(final["state"]))


def _summary(job: dict, url: str, unit: dict) -> None:
    reason = f" ({job['state_reason']})" if job.get("state_reason") else ""
    typer.echo(f"job {job['id']}: {job['state']}{reason}  {job_detail(job, unit)}")
    typer.echo(
        f"estimate {hours(job['estimate_gpu_hours'])} {unit['hours']} "
        f"({job['estimate_source']}); {url}{job['url']}"
    )


@app.command("list")
def list_jobs(
    allocation: Annotated[int | None, typer.Option(help="Only this allocation's jobs.")] = None,
    limit: Annotated[int, typer.Option(help="At most this many, newest first (0: all).")] = 20,
    as_json: JsonOpt = False,
) -> None:
    """Your jobs, newest first."""
    api = client()
    if limit:
        rows = api.get("jobs/", allocation=allocation)["results"][:limit]
    else:
        rows = api.all_pages("jobs/", **({"allocation": allocation} if allocation else {}))
    if as_json:
        print_json(rows)
        return
    sized_table(
        api,
        "Jobs",
        ["id", "alloc", "sweep", "state", "model", "size", "estimate", "used", "created"],
        rows,
        _row,
    )


def _row(j: dict, unit: dict) -> tuple:
    return (
        j["id"],
        j["allocation"],
        j["sweep"],
        j["state"],
        (j.get("params") or {}).get("model"),
        size(j["gpus"], unit),
        hours(j["estimate_gpu_hours"]),
        hours((j["gpu_seconds"] or 0) / 3600),
        (j["created_at"] or "")[:16].replace("T", " "),
    )


@app.command()
def show(
    job: Annotated[int, typer.Argument(help="The job's id.")], as_json: JsonOpt = False
) -> None:
    """One job: state, progress, estimate, metrics."""
    api = client()
    data = api.get(f"jobs/{job}/")
    if as_json:
        print_json(data)
        return
    unit = unit_of(api, data["allocation"])
    _summary(data, api.settings.url, unit)
    rows = metric_rows(data.get("metrics") or {})
    if rows:
        table("Metrics (95% intervals)", ["metric", "per patient", "per image"], rows, compact=True)
    typer.echo(f"{unit['hours']} so far {hours(gpu_hours_so_far(data))}")
    say(f"params {json.dumps(data['params'])}")


#: The metrics the job page's table shows, in its order and words (launcher/charts.py).
METRICS = (
    ("accuracy", "accuracy"),
    ("precision", "precision"),
    ("recall", "recall"),
    ("specificity", "specificity"),
    ("f1", "F1"),
    ("roc_auc", "ROC AUC"),
)


def metric_rows(metrics: dict) -> list[tuple[str, str, str]]:
    """Each metric per patient and per image as the page shows it: "0.983 (0.950-1.000)"."""

    def shown(level: str, key: str) -> str:
        found = (metrics.get(level) or {}).get(key)
        if not isinstance(found, dict) or found.get("value") is None:
            return "-"
        ci = found.get("ci")
        interval = f" ({ci[0]:.3f}-{ci[1]:.3f})" if ci else ""
        return f"{found['value']:.3f}{interval}"

    if not any(isinstance(metrics.get(level), dict) for level in ("patient", "slice")):
        return []
    return [(label, shown("patient", key), shown("slice", key)) for key, label in METRICS]


@app.command()
def logs(
    job: Annotated[int, typer.Argument(help="The job's id.")],
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep printing until it ends.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """The tail of a job's log."""
    api = client()
    if follow and as_json:
        raise typer.BadParameter("--follow prints text; leave out --json", param_hint="--json")
    if follow:
        last = follow_log(api, job, lambda text: (sys.stdout.write(text), sys.stdout.flush()))
        if last["log"] and not last["log"].endswith("\n"):
            sys.stdout.write("\n")
        return
    data = api.get(f"jobs/{job}/log/")
    if as_json:
        print_json(data)
    else:
        sys.stdout.write(
            data["log"] if data["log"].endswith("\n") or not data["log"] else data["log"] + "\n"
        )


@app.command()
def cancel(
    job: Annotated[int, typer.Argument(help="The job's id.")], as_json: JsonOpt = False
) -> None:
    """Cancel a job (a finished one is refused: exit 3)."""
    data = client().post(f"jobs/{job}/cancel/")
    print_json(data) if as_json else typer.echo(f"job {data['id']}: {data['state']}")
