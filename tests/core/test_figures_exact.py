"""`core.figures.exact`, the form of a figure in a file: every digit of a Decimal, a float to
FILE_PLACES decimals correctly rounded from its binary value, no exponent, no trailing zeros.
The CSV of a centre's year writes 31,000 of them."""

from __future__ import annotations

import random
from decimal import Decimal

import pytest

from core.figures import FILE_PLACES, exact


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (194 / 3600, "0.053889"),  # 0.05388888888888889 as a float
        (1 / 3600, "0.000278"),
        (3600 / 3600, "1"),
        (0.0, "0"),
        (1e-7, "0"),
        (2.5e-6, "0.000003"),  # the float is 2.50000000000000010...e-06: rounded up
        (1e-20, "0"),
        (123456789 / 3600, "34293.5525"),  # 34293.552500: trailing zeros dropped
        (-5400 / 3600, "-1.5"),
        (Decimal("6.0000"), "6"),
        (Decimal("0.00001"), "0.00001"),
        (12, "12"),
    ],
)
def test_exact_writes_each_kind_of_figure(value, text):
    assert exact(value) == text


def test_a_float_is_its_value_rounded_to_the_file_places():
    """For 20,000 random figures of GPU-seconds in hours and of any size, `exact` reads back as
    the float rounded to FILE_PLACES (round() is correctly rounded too)."""
    rng = random.Random(6)
    for _ in range(10_000):
        for value in (
            rng.randrange(-(10**9), 10**9) / 3600,
            rng.random() * 10 ** rng.randrange(-9, 9),
        ):
            text = exact(value)
            assert "e" not in text.lower()
            assert Decimal(text) == Decimal(str(round(value, FILE_PLACES))), value
