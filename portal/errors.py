"""Errors under /api/ are JSON, whatever raised them (docs/api.md): a URL no route matches is
`{"detail": "Not found."}` (a 404 page in HTML would break every client), a server error is
`{"detail": ...}`, and a query parameter given twice or given empty is a 400 (the API has no
list-valued query parameters, and silently taking the last value, or reading `?kind=` as "any
kind", hides a client's bug)."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults

API_PREFIX = "/api/"
# The Swagger UI page asks for its start-up script as `?script=` (drf-spectacular).
QUERY_CHECK_EXEMPT = ("/api/v1/docs/",)
_JSON_BODIES = {
    404: {"detail": "Not found."},
    405: {"detail": "Method not allowed."},
    500: {"detail": "Server error: it is logged and will be looked at."},
}


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if request.path.startswith(API_PREFIX):
        return JsonResponse({"detail": "Not found."}, status=404)
    return defaults.page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    if request.path.startswith(API_PREFIX):
        return JsonResponse(_JSON_BODIES[500], status=500)
    return defaults.server_error(request)


class ApiJsonErrorsMiddleware:
    """Under /api/, an error answered in HTML becomes JSON, whatever answered it: with DEBUG on,
    Django's technical 404 page (a URL no route matches: `requests/0.5/`, `clusters/abc/`) and
    500 page bypass `page_not_found` and `server_error`; this holds the contract there too."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            request.path.startswith(API_PREFIX)
            and response.status_code in _JSON_BODIES
            and response.get("Content-Type", "").startswith(("text/html", "text/plain"))
        ):
            return JsonResponse(_JSON_BODIES[response.status_code], status=response.status_code)
        return response


class SingleQueryValuesMiddleware:
    """Refuse `?a=1&a=2` and `?a=` on the API with a per-field 400."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path.startswith(API_PREFIX) and not request.path.startswith(QUERY_CHECK_EXEMPT):
            errors = {
                k: ["Give this parameter once."]
                if len(v) > 1
                else ["Give a value, or leave the parameter out."]
                for k, v in request.GET.lists()
                if len(v) > 1 or v == [""]
            }
            if errors:
                return JsonResponse(dict(sorted(errors.items())), status=400)
        return self.get_response(request)
