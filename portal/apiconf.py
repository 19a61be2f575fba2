"""The API's parser and paginator, named in settings.REST_FRAMEWORK (kept apart from
portal/api.py, which imports DRF's views: DRF imports these while it builds APIView)."""
from __future__ import annotations

import re
from typing import Any

from rest_framework import parsers
from rest_framework.exceptions import ParseError, ValidationError
from rest_framework.pagination import PageNumberPagination


#: A page number: a positive integer of at most 19 ASCII digits (past the last page: a 404).
PAGE_NUMBER = re.compile(r"[1-9][0-9]{0,18}")


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(v) for v in value)
    return False


class JSONParser(parsers.JSONParser):
    """The API reads JSON only (one content type per request body in the schema; anything else
    is a 415). A NUL character anywhere is refused here, once for every field: PostgreSQL cannot
    store one, and a lookup with it would be a 500."""

    def parse(self, stream, media_type=None, parser_context=None):
        data = super().parse(stream, media_type, parser_context)
        if _has_nul(data):
            raise ParseError("The body contains a NUL character (\\u0000), which no field accepts.")
        return data


class FormParser(parsers.FormParser):
    """A form body (`curl -d username=.. -d password=..`), read only where a view names it
    (auth/token/); a NUL character is refused as in JSON."""

    def parse(self, stream, media_type=None, parser_context=None):
        data = super().parse(stream, media_type, parser_context)
        if any(_has_nul(key) or _has_nul(value) for key, values in data.lists() for value in values):
            raise ParseError("The body contains a NUL character (%00), which no field accepts.")
        return data


class Pagination(PageNumberPagination):
    """Page numbers as the schema says: one positive integer (a 400 otherwise); a page past the
    end is a 404."""

    def paginate_queryset(self, queryset, request, view=None):
        values = request.query_params.getlist(self.page_query_param)
        # ASCII digits only: "²".isdigit() is true, and int("²") fails deep in the paginator.
        if len(values) > 1 or (values and not PAGE_NUMBER.fullmatch(values[0])):
            raise ValidationError({self.page_query_param: ["A page number: one integer from 1."]})
        return super().paginate_queryset(queryset, request, view)

    def get_schema_operation_parameters(self, view):
        params = super().get_schema_operation_parameters(view)
        for param in params:
            if param["name"] == self.page_query_param:
                param["schema"]["minimum"] = 1
                param["schema"]["maximum"] = 2**63 - 1  # a page past the last is a 404
        return params
