"""DRF's `serializers` namespace with strict strings, for every API module of the portal.

DRF's CharField (and its subclasses: email, regex, slug, URL, IP address) turns a JSON number
into a string (`"pi_name": 0` became "0"), where the schema says `type: string`; found by the
API fuzzer. These subclasses refuse anything but a string with DRF's own `invalid` message, and
`ModelSerializer` maps the model's text fields to them. Used as

    from allocations.api import strict as serializers

so a module reads as it would with DRF's; nothing of DRF is changed for anyone else.
"""
from __future__ import annotations

from typing import Any

from django.db import models
from rest_framework import serializers as drf
from rest_framework.serializers import *  # noqa: F403 - the whole namespace, as DRF's


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


class ModelSerializer(drf.ModelSerializer):
    serializer_field_mapping = {
        **drf.ModelSerializer.serializer_field_mapping,
        models.CharField: CharField, models.TextField: CharField,
        models.EmailField: EmailField, models.SlugField: SlugField, models.URLField: URLField,
        models.GenericIPAddressField: IPAddressField,
    }
