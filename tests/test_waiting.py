"""tests.waiting.wait_for: the suite's one polling helper (no database)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.waiting import wait_for


def test_it_returns_the_first_truthy_value() -> None:
    values: Iterator[object] = iter([None, 0, "", [], "ready", "later"])
    assert wait_for(lambda: next(values), timeout=5, every=0.001) == "ready"


def test_it_runs_step_before_each_check() -> None:
    calls: list[str] = []

    def step() -> None:
        calls.append("step")

    def check() -> bool:
        calls.append("check")
        return calls.count("check") == 3

    assert wait_for(check, step=step, timeout=5, every=0.001) is True
    assert calls == ["step", "check"] * 3


def test_on_timeout_it_fails_naming_what_and_how_things_stood() -> None:
    with pytest.raises(pytest.fail.Exception) as failure:
        wait_for(
            lambda: None,
            timeout=0.05,
            every=0.01,
            what="the widget",
            describe=lambda: "widget state: broken",
        )
    message = str(failure.value)
    assert "the widget" in message
    assert "0.05 s" in message
    assert "None" in message
    assert "widget state: broken" in message
