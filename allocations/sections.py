"""Sections that higher apps add to the allocation page, without allocations importing them.

The launcher (jobs, sweeps) and its cloud app (clusters, cost per day) register a provider in
their `AppConfig.ready()`; the allocation page asks every provider for its sections. Each
provider returns a list of `{"template": name, "data": {...}}` and runs a bounded number of
queries. The view has already checked that the user may see the allocation.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .models import Allocation

SectionProvider = Callable[[Allocation, Any], list[dict[str, Any]]]
_PROVIDERS: list[SectionProvider] = []


def register_allocation_section(provider: SectionProvider) -> None:
    """Add a provider once (safe to call again, e.g. when apps are reloaded in tests)."""
    if provider not in _PROVIDERS:
        _PROVIDERS.append(provider)


def allocation_sections(allocation: Allocation, user: Any) -> list[dict[str, Any]]:
    sections: list[dict[str, Any]] = []
    for provider in _PROVIDERS:
        sections.extend(provider(allocation, user))
    return sections
