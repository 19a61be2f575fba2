"""The command line reads the API's figures as the API writes them (docs/api.md, "Figures":
hours are numbers, unrounded; money decimal strings) and prints them for people: hours to a
few places but never a charge above zero as zero, money exactly as rounded half up. No portal
runs here: the console script's functions are given the answers a portal gives."""

from __future__ import annotations

import pytest
from rich.console import Console

from portal_cli import main, output

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
    assert "granted 400.0, used 0.00028, reserved 0.000, left 400.000 GPU-hours" in printed
    day = next(line for line in printed.splitlines() if "2026-01-05" in line)
    cells = [cell.strip() for cell in day.split("\u2502") if cell.strip()]  # between the borders
    assert cells == ["2026-01-05", "0.00028", "0.0003"]  # hours and money above zero: not 0


def test_an_estimate_prints_its_numbers_to_three_places(capsys):
    found = {
        "gpu_hours": 0.167,
        "cost": "0.0835",
        "currency": "USD",
        "source": "wall-time",
        "basis": "10 min wall time x 1 GPU",
        "remaining_gpu_hours": 399.8330555555556,
        "fits": True,
    }
    output.show_estimate(found, f"{output.hours(found['gpu_hours'])} GPU-hours", as_json=False)
    assert capsys.readouterr().out.splitlines()[0] == (
        "Estimate: 0.167 GPU-hours (wall-time); 399.833 GPU-hours left: it fits."
    )
