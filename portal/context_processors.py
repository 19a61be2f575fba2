"""Template context every page needs (navigation state)."""
from __future__ import annotations

from allocations.selectors import is_reviewer


def navigation(request) -> dict:
    user = getattr(request, "user", None)
    return {"nav_is_reviewer": bool(user and is_reviewer(user))}
