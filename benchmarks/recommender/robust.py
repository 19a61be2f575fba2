"""A statistic robust to a loaded machine (pure): a run on a busy machine is slower, never
faster, than the same run on a quiet one, so of several runs of one shape the faster ones say
what the machine does; the median of the faster half keeps one lucky run from deciding."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def faster_half_median(items: Sequence[T], *, key: Callable[[T], float]) -> T:
    """The item at the median of the faster half of `items`, by `key` (higher is faster):
    with n items the fastest ceil(n / 2), and of those the one in the middle (the faster of
    two middles). An item of `items`, so what it carries beside the figure stays with it."""
    if not items:
        raise ValueError("no items")
    ranked = sorted(items, key=key, reverse=True)
    half = ranked[: math.ceil(len(ranked) / 2)]
    return half[(len(half) - 1) // 2]
