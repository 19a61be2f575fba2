"""The integer ranges every database stores, so input outside them is a 400 or a 404 before it
reaches a query (SQLite raises OverflowError past a 64-bit integer; PostgreSQL an error past a
column's type)."""

from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError

#: An id (a BigAutoField primary key, or any integer filter on one): a 64-bit signed integer.
ID_MIN = -(2**63)
ID_MAX = 2**63 - 1
#: A PositiveIntegerField (GPU-hours, CPU-hours): 0 to the largest 32-bit signed integer.
COUNT_MAX = 2**31 - 1


def as_id(raw: object) -> int | None:
    """`raw` as an id when it is one (a whole number in the id range, parsed by Django), else
    None: for fields that take an id or a name ("²" passes `str.isdigit()` and fails `int()`)."""
    field = forms.IntegerField(min_value=ID_MIN, max_value=ID_MAX)
    try:
        return field.clean(raw)
    except ValidationError:
        return None


class IdConverter:
    """`<id:pk>` in a URL: digits within an id's range; past it the URL matches nothing (404),
    where `<int:pk>` hands a query a number SQLite cannot bind (OverflowError: a 500)."""

    regex = "[0-9]{1,19}"

    def to_python(self, value: str) -> int:
        number = int(value)
        if number > ID_MAX:
            raise ValueError("past the id range")
        return number

    def to_url(self, value: int) -> str:
        return str(value)
