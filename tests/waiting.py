"""The one polling helper of the test suite (and of the bench scripts that reuse it)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import pytest

T = TypeVar("T")


def wait_for(
    check: Callable[[], T | None],
    *,
    timeout: float = 60.0,
    every: float = 0.3,
    what: str = "condition",
    step: Callable[[], object] | None = None,
    describe: Callable[[], str] | None = None,
) -> T:
    """Poll `check` until it returns a truthy value and return that value.

    `step()` (a beat: a sync, a poll of the backend...), when given, runs before each check;
    `every` seconds pass between checks. After `timeout` seconds the test fails with a message
    naming `what`, the timeout, the last value and, when given, `describe()` (how things stood).

    The bounds only keep a broken component from hanging the suite; no test asserts on
    durations, so they are generous.
    """
    deadline = time.monotonic() + timeout
    while True:
        if step is not None:
            step()
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            message = f"gave up waiting for {what} after {timeout:g} s (last value: {value!r})"
            if describe is not None:
                message += f"; {describe()}"
            pytest.fail(message)
        time.sleep(every)
