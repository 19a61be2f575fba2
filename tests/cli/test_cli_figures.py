"""The command line reads the API's figures as the API writes them (docs/api.md, "Figures":
hours are numbers, unrounded; money decimal strings) and prints them for people: hours to a
few places but never a charge above zero as zero, money exactly as rounded half up. No portal
runs here: the console script's functions are given the answers a portal gives."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from rich.console import Console

from portal_cli import common, jobs, main, notebooks, output

DETAIL = {
    "id": 3,
    "project_code": "ABC-DEF-001",
    "facility": "local",
    "status": "active",
    "gpu_hours": 400.0,
    "gpu_hours_used": 1 / 3600,  # one GPU-second, as the ledger has it
    "gpu_hours_reserved": 0.0,
    "gpu_hours_remaining": 400 - 1 / 3600,
    "budget": None,
}
DAILY = {
    "allocation": 3,
    "daily": [{"date": "2026-01-05", "gpu_hours": 1 / 3600, "cost": "0.0003"}],
}


@pytest.mark.parametrize(
    "value,places,shown",
    [
        (1 / 3600, 3, "0.00028"),  # one GPU-second: two significant digits, not 0.000
        (0.7858333333333334, 3, "0.786"),
        (0.7858333333333334, 1, "0.8"),
        (400.0, 1, "400.0"),
        (1234.5, 3, "1,234.500"),
        (0.0, 3, "0.000"),  # nothing used is 0
        (None, 3, "-"),
    ],
)
def test_hours_are_rounded_for_people_never_to_zero(value, places, shown):
    assert output.hours(value, places) == shown


@pytest.mark.parametrize(
    "value,shown",
    [("12.3450", "12.35"), ("1234.5000", "1,234.50"), ("0.0003", "0.0003"), ("0.0000", "0.00")],
)
def test_money_is_rounded_half_up_from_its_decimal_string_never_to_zero(value, shown):
    assert output.money(value) == shown


def test_usage_prints_a_one_second_charge_as_more_than_nothing(monkeypatch, capsys):
    class Api:
        def get(self, path):
            return {"allocations/3/": DETAIL, "allocations/3/usage/": DAILY}[path]

    monkeypatch.setattr(main, "client", Api)
    monkeypatch.setattr(output, "out", Console(soft_wrap=False, width=100, no_color=True))
    main.usage(allocation=3, as_json=False)
    printed = capsys.readouterr().out
    words = " ".join(printed.split())  # the line wraps at the terminal's width
    assert "granted 400, used 0.00028, reserved 0.00, left 400.00 GPU-hours" in words
    day = next(line for line in printed.splitlines() if "2026-01-05" in line)
    cells = [cell.strip() for cell in day.split("\u2502") if cell.strip()]  # between the borders
    assert cells == ["2026-01-05", "0.00028", "0.0003"]  # hours and money above zero: not 0


def test_an_estimate_prints_its_numbers_by_the_pages_rule(capsys):
    found = {
        "gpu_hours": 0.167,
        "cost": "0.0835",
        "currency": "USD",
        "source": "wall-time",
        "basis": "10 min wall time x 1 GPU",
        "remaining_gpu_hours": 399.8330555555556,
        "fits": True,
    }
    output.show_estimate(
        found, f"{output.hours(found['gpu_hours'])} GPU-hours", as_json=False, unit=common.GPU_UNIT
    )
    assert capsys.readouterr().out.splitlines()[0] == (
        "Estimate: 0.17 GPU-hours (wall-time); 399.83 GPU-hours left: it fits."
    )


CPU = {
    "key": "cpu",
    "singular": "CPU",
    "plural": "CPUs",
    "hours": "CPU-hours",
    "seconds": "CPU-seconds",
}


class Portal:
    """The answers a portal gives about one allocation on a CPU-only facility (3) and one on a
    GPU facility (4), with a job and a notebook session on each."""

    settings = SimpleNamespace(url="http://portal.example")

    def __init__(self):
        self.units = {3: CPU, 4: common.GPU_UNIT}

    def get(self, path, **params):
        allocations = [
            {
                **DETAIL,
                "id": n,
                "facility": "local" if unit is CPU else "jade2",
                "unit": unit,
                "end_date": "2026-12-31",
                "runs_out_on": None,
            }
            for n, unit in self.units.items()
        ]
        return {
            "allocations/": {"results": allocations, "next": None},
            "jobs/": {"results": [job(3, 2), job(4, 1)], "next": None},
            "notebooks/": {"results": [session(3), session(4)], "next": None},
        }.get(path) or next(a for a in allocations if path == f"allocations/{a['id']}/")

    def all_pages(self, path, **params):
        return self.get(path)["results"]


def job(allocation: int, gpus: int) -> dict:
    return {
        "id": 10 + allocation,
        "allocation": allocation,
        "sweep": None,
        "state": "succeeded",
        "params": {"model": "resnet18"},
        "gpus": gpus,
        "estimate_gpu_hours": 0.5,
        "gpu_seconds": 1800,
        "created_at": "2026-01-05T10:00:00Z",
    }


def session(allocation: int) -> dict:
    return {
        "id": 20 + allocation,
        "allocation": allocation,
        "owner": "rosalind",
        "state": "stopped",
        "gpus": 1,
        "hours": 2,
        "gpu_seconds_so_far": 3600,
        "started_at": "2026-01-05T10:00:00Z",
    }


def line(printed: str, first: str) -> str:
    return next(row for row in printed.splitlines() if row.strip("\u2502 ").startswith(first))


def test_the_allocations_title_names_the_facilities_counted_in_cpu_hours(monkeypatch, capsys):
    monkeypatch.setattr(main, "client", Portal)
    monkeypatch.setattr(output, "out", Console(soft_wrap=False, width=80, no_color=True))
    main.allocations(as_json=False)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].strip() == "Allocations (GPU-hours; CPU-hours on local)"
    assert max(len(line.rstrip()) for line in lines) <= 80


@pytest.mark.parametrize(
    "command,module,ids",
    [
        (lambda: jobs.list_jobs(allocation=None, limit=0, as_json=False), jobs, ("13", "14")),
        (
            lambda: notebooks.list_notebooks(allocation=None, limit=0, as_json=False),
            notebooks,
            ("23", "24"),
        ),
    ],
)
def test_lists_give_each_rows_size_in_cpus_where_the_facility_has_no_gpus(
    monkeypatch, capsys, command, module, ids
):
    monkeypatch.setattr(module, "client", Portal)
    monkeypatch.setattr(output, "out", Console(soft_wrap=False, width=80, no_color=True))
    command()
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == (
        "Hours: GPU-hours; CPU-hours where the size is CPUs (a facility without GPUs)."
    )
    on_cpu, on_gpu = (line("\n".join(lines), first) for first in ids)
    assert ("2 CPUs" if module is jobs else "1 CPU ") in on_cpu and "GPU" not in on_cpu
    assert "1 GPU" in on_gpu and "CPU" not in on_gpu
    assert max(len(row.rstrip()) for row in lines) <= 80


def test_a_job_on_a_cpu_facility_is_summed_up_in_cpu_hours(monkeypatch, capsys):
    monkeypatch.setattr(jobs, "client", Portal)
    shown = {**job(3, 2), "state_reason": "", "estimate_source": "wall-time", "url": "/jobs/13/"}
    monkeypatch.setattr(
        Portal, "get", lambda self, path, **q: shown if "jobs" in path else {"unit": CPU}
    )
    jobs.show(job=13, as_json=False)
    printed = capsys.readouterr().out
    assert "estimate 0.50 CPU-hours (wall-time)" in printed and "0.50 CPU-h" in printed
    assert "CPU-hours so far 0.50" in printed and "GPU" not in printed


def test_show_prints_each_metric_with_its_interval_within_80_columns(monkeypatch, capsys):
    """Issue 39: `portal jobs show` printed only "n" and "positives" (to 4 decimals), and a
    params line of 168 characters."""
    metric = {"accuracy": {"value": 0.983, "ci": [0.95, 1.0]}, "n": 60, "positives": 30}
    shown = {
        **job(3, 1),
        "state_reason": "",
        "estimate_source": "measured",
        "url": "/jobs/13/",
        "metrics": {"patient": {**metric, "accuracy": {"value": 1, "ci": [1, 1]}}, "slice": metric},
        "params": {"model": "densenet121", "dataset": "synthetic-ct", "synthetic_n": 300,
                   "size": 64, "epochs": 8, "batch_size": 16, "lr": 0.001, "seed": 0},
    }  # fmt: skip
    monkeypatch.setattr(jobs, "client", Portal)
    monkeypatch.setattr(
        Portal, "get", lambda self, path, **q: shown if "jobs" in path else {"unit": CPU}
    )
    monkeypatch.setattr(output, "out", Console(soft_wrap=False, width=80, no_color=True))
    jobs.show(job=13, as_json=False)
    printed = capsys.readouterr().out
    rows = {line.split()[0]: line.split()[1:] for line in printed.splitlines() if line.strip()}
    assert rows["accuracy"] == ["1.000", "(1.000-1.000)", "0.983", "(0.950-1.000)"]
    assert rows["precision"] == ["-", "-"]  # not reported: said, not invented
    assert "n" not in rows and "positives" not in rows
    assert max(len(line) for line in printed.splitlines()) <= 80
    assert '"seed": 0}' in printed
