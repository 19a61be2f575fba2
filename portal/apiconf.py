"""The API's parser and paginator, named in settings.REST_FRAMEWORK (kept apart from
portal/api.py, which imports DRF's views: DRF imports these while it builds APIView)."""

from __future__ import annotations

import math
import re
from typing import Any

from django.core.paginator import Paginator as DjangoPaginator
from django.utils.functional import cached_property
from rest_framework import parsers
from rest_framework.exceptions import ParseError, ValidationError
from rest_framework.pagination import PageNumberPagination

#: A page number: a positive integer of at most 19 ASCII digits (past the last page: a 404).
PAGE_NUMBER = re.compile(r"[1-9][0-9]{0,18}")


#: How deep a JSON body may nest (objects and arrays together). The API's deepest body is a
#: sweep's `grid.fixed` (3 levels); past this a body is refused before any field reads it, so
#: no serializer, JSON column or error message recurses through thousands of levels.
MAX_DEPTH = 32


def _has_nul(value: str) -> bool:
    return "\x00" in value


def body_problem(data: Any) -> str:
    """Why a parsed JSON body is refused as a whole ("" when it is not): nested deeper than
    MAX_DEPTH, a number past a float (`1e400` reads as infinity, and `int(inf)` is an
    OverflowError in whichever field meets it), or a NUL character in any key or string
    (PostgreSQL cannot store one, and a lookup with it would be a 500). Walked without
    recursion, so a deep body cannot exhaust the stack here either."""
    stack: list[tuple[Any, int]] = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (dict, list)):
            if depth >= MAX_DEPTH:
                return f"The body nests deeper than {MAX_DEPTH} levels of objects and arrays."
            if isinstance(value, dict):
                if any(_has_nul(key) for key in value):
                    return NUL_MESSAGE
                stack.extend((item, depth + 1) for item in value.values())
            else:
                stack.extend((item, depth + 1) for item in value)
        elif isinstance(value, str) and _has_nul(value):
            return NUL_MESSAGE
        elif isinstance(value, float) and not math.isfinite(value):
            return "The body has a number too large to read (past 1.8e308); no field accepts one."
    return ""


NUL_MESSAGE = "The body contains a NUL character (\\u0000), which no field accepts."


class JSONParser(parsers.JSONParser):
    """The API reads JSON only (one content type per request body in the schema; anything else
    is a 415). Refused here, once for every field and every endpoint, with a 400: what is no
    JSON (NaN and Infinity included: DRF's strict mode), a body nested so deep that reading it
    exhausts the stack (RecursionError), and what `body_problem` names."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError(
                "JSON parse error - the body nests deeper than "
                f"{MAX_DEPTH} levels of objects and arrays."
            ) from None
        except OverflowError as exc:
            raise ParseError(f"JSON parse error - {exc}.") from None
        problem = body_problem(data)
        if problem:
            raise ParseError(problem)
        return data


class FormParser(parsers.FormParser):
    """A form body (`curl -d username=.. -d password=..`), read only where a view names it
    (auth/token/); a NUL character is refused as in JSON."""

    def parse(self, stream, media_type=None, parser_context=None):
        data = super().parse(stream, media_type, parser_context)
        if any(
            _has_nul(key) or _has_nul(value) for key, values in data.lists() for value in values
        ):
            raise ParseError("The body contains a NUL character (%00), which no field accepts.")
        return data


def known_count_paginator(known: int) -> type[DjangoPaginator]:
    """Django's paginator told its list's length (a total kept exactly elsewhere: the jobs'
    JobCount) rather than running a COUNT of the rows."""

    class KnownCountPaginator(DjangoPaginator):
        @cached_property
        def count(self) -> int:
            return known

    return KnownCountPaginator


class Pagination(PageNumberPagination):
    """Page numbers as the schema says: one positive integer (a 400 otherwise); a page past the
    end is a 404. A view whose `known_count()` gives a number (the staff's unfiltered jobs) pages
    by it instead of counting its rows.

    A view with `pages_by_id` set picks a page's ids first, from its rows' own columns (an
    index), then reads those rows with what they join: a page deep in a long list (a centre
    member's page 50 of 11,000 jobs) sorts 2,500 ids, not 2,500 rows joined to their
    allocations, projects and users. One query more."""

    def paginate_queryset(self, queryset, request, view=None):
        values = request.query_params.getlist(self.page_query_param)
        # ASCII digits only: "²".isdigit() is true, and int("²") fails deep in the paginator.
        if len(values) > 1 or (values and not PAGE_NUMBER.fullmatch(values[0])):
            raise ValidationError({self.page_query_param: ["A page number: one integer from 1."]})
        known = getattr(view, "known_count", None)
        count = known() if callable(known) else None
        if count is not None:
            self.django_paginator_class = known_count_paginator(count)
        if not getattr(view, "pages_by_id", False):
            return super().paginate_queryset(queryset, request, view)
        ids: list | None = super().paginate_queryset(
            queryset.values_list("pk", flat=True), request, view
        )
        if ids is None:
            return None
        rows = queryset.in_bulk(ids)
        return [rows[pk] for pk in ids if pk in rows]  # a row deleted meanwhile is left out

    def get_schema_operation_parameters(self, view):
        params = super().get_schema_operation_parameters(view)
        for param in params:
            if param["name"] == self.page_query_param:
                param["schema"]["minimum"] = 1
                param["schema"]["maximum"] = 2**63 - 1  # a page past the last is a 404
        return params
