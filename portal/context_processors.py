"""Template context every page needs (navigation state)."""

from __future__ import annotations

from django.urls import get_script_prefix, reverse

from allocations.roles import is_reviewer, is_staff, sees_all_projects

# The site header's links, by route name (reversed once per script prefix, not on every page).
NAV_ROUTES = (
    "dashboard",
    "onboarding",
    "recommend",
    "benchmark-list",
    "knowledge",
    "request-new",
    "request-list",
    "allocation-list",
    "staff-home",
    "review-queue",
    "usage-report",
    "admin:index",
    "api-docs",
    "notification-settings",
    "logout",
    "login",
    "account-tokens",
)
_nav_urls: dict[str, dict[str, str]] = {}


def nav_urls() -> dict[str, str]:
    """{route name with "-" and ":" as "_": URL} for the header's links."""
    prefix = get_script_prefix()
    urls = _nav_urls.get(prefix)
    if urls is None:
        urls = _nav_urls[prefix] = {
            name.replace("-", "_").replace(":", "_"): reverse(name) for name in NAV_ROUTES
        }
    return urls


def navigation(request) -> dict:
    user = getattr(request, "user", None)
    return {
        "nav_is_reviewer": bool(user and is_reviewer(user)),
        "nav_sees_all": bool(user and sees_all_projects(user)),
        "nav_is_staff": bool(user and is_staff(user)),
        "nav": nav_urls(),
    }
