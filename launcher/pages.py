"""Sections the launcher adds to pages of lower apps (allocations/views.py includes them)."""
from __future__ import annotations

from typing import Any

from allocations.models import Allocation

from . import selectors


def allocation_sections(allocation: Allocation, user: Any) -> list[dict[str, Any]]:
    """The jobs and sweeps sections of /allocations/<id>/ (two queries; the caller already
    checked that `user` may see the allocation)."""
    return [{"template": "launcher/allocation_sections.html",
             "data": {"jobs": list(selectors.allocation_jobs(allocation)),
                      "sweeps": list(selectors.allocation_sweeps(allocation))}}]
