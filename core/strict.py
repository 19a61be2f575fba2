"""DRF fields with strict strings and whole numbers, for every API module of the portal.

DRF's CharField (and its subclasses: email, regex, slug, URL, IP address) turns a JSON number
into a string (`"pi_name": 0` became "0"), where the schema says `type: string`; found by the
API fuzzer. These subclasses refuse anything but a string with DRF's own `invalid` message, and
`ModelSerializer` maps the model's text fields to them.

DRF's PrimaryKeyRelatedField hands its value to the database as it comes, and Django's
`int(1.5)` is 1: `{"allocation": 1.5}` launched on allocation 1 (issue 34). Its IntegerField
takes "1.0", and FloatField takes `true` as 1.0. Here an id and a whole number are what
`whole_number` accepts (an int, a float with no fraction: JSON's 7.0 is 7, or a string of
digits, as DRF takes "7"); 1.5, "1.5", "1e0" and booleans are a per-field 400, and an id
outside the 64-bit range is one that does not exist (never a database error). Used by its own
name beside DRF's namespace, for every field it defines:

    from rest_framework import serializers

    from core import strict

    class Out(strict.ModelSerializer):
        name = strict.CharField(max_length=80)
        tags = serializers.ListField(child=strict.CharField())

Nothing of DRF is changed for anyone else.
"""

from __future__ import annotations

import math
import re
from typing import Any

from django.db import models
from rest_framework import serializers as drf

from .bounds import ID_MAX as _ID_MAX
from .bounds import ID_MIN as _ID_MIN


class _Strict:
    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, str):
            self.fail("invalid")  # type: ignore[attr-defined]
        return super().to_internal_value(data)  # type: ignore[misc]


class CharField(_Strict, drf.CharField):
    pass


class EmailField(_Strict, drf.EmailField):
    pass


class RegexField(_Strict, drf.RegexField):
    pass


class SlugField(_Strict, drf.SlugField):
    pass


class URLField(_Strict, drf.URLField):
    pass


class IPAddressField(_Strict, drf.IPAddressField):
    pass


_DIGITS = re.compile(r"[-+]?[0-9]{1,40}")


def whole_number(data: Any) -> int | None:
    """`data` as an int when it is a whole number, else None: an int (never a bool), a finite
    float without a fraction, or a string of ASCII digits with an optional sign."""
    if isinstance(data, bool):
        return None
    if isinstance(data, int):
        return data
    if isinstance(data, float):
        return int(data) if math.isfinite(data) and data.is_integer() else None
    if isinstance(data, str) and _DIGITS.fullmatch(data.strip()):
        return int(data.strip())
    return None


class IntegerField(drf.IntegerField):
    def to_internal_value(self, data: Any) -> int:
        number = whole_number(data)
        if number is None:
            self.fail("invalid")
        return number


class FloatField(drf.FloatField):
    def to_internal_value(self, data: Any) -> float:
        if isinstance(data, bool):
            self.fail("invalid")
        return super().to_internal_value(data)


class PrimaryKeyRelatedField(drf.PrimaryKeyRelatedField):
    default_error_messages = {"not_whole": "A whole number is required."}

    def to_internal_value(self, data: Any) -> Any:
        if self.pk_field is None:
            number = whole_number(data)
            if number is None:
                self.fail("not_whole")
            if not _ID_MIN <= number <= _ID_MAX:
                self.fail("does_not_exist", pk_value=data)
            data = number
        return super().to_internal_value(data)


class ModelSerializer(drf.ModelSerializer):
    serializer_related_field = PrimaryKeyRelatedField
    serializer_field_mapping = {
        **drf.ModelSerializer.serializer_field_mapping,
        **{
            model_field: IntegerField
            for model_field, field in drf.ModelSerializer.serializer_field_mapping.items()
            if field is drf.IntegerField
        },
        models.FloatField: FloatField,
        models.CharField: CharField,
        models.TextField: CharField,
        models.EmailField: EmailField,
        models.SlugField: SlugField,
        models.URLField: URLField,
        models.GenericIPAddressField: IPAddressField,
    }
