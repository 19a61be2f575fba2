"""The backend registry: one entry per `Facility.backend` (local, slurm, aws, manual, and any
backend registered later: the names are the registry's, so a new backend needs no migration).

Each entry is an object implementing `ComputeBackend` (contract.py, with the capabilities,
errors and facts of the seam) and declaring, in `capabilities`, which of the optional
operations it supports. Services ask the registry (`supports`, `backend_for`) instead of probing
with hasattr or comparing backend names; that rule is kept by tests/portal/test_architecture.py.
Entries register themselves from their app's `AppConfig.ready()` (launcher: local, slurm,
manual; launcher.cloud: aws).

A facility whose backend is not registered, or not configured (a Slurm facility with no host or
key yet), is served by the `manual` entry: staff set it up by hand, and every page says so
before anyone relies on it (`is_connected`).

`Facility.backend` and `UsageRecord.source` take their choices from here (`backend_choices`,
`usage_source_choices`, named by the settings FACILITY_BACKEND_CHOICES and
USAGE_SOURCE_CHOICES: the allocations app sits below the launcher and never imports it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .contract import BaseBackend, Capability, ComputeBackend

if TYPE_CHECKING:
    from allocations.models import Facility


class ManualBackend(BaseBackend):
    """Staff set the facility up by hand and activate allocations from the admin: nothing is
    provisioned, submitted or charged by the portal."""

    name = "manual"
    label = "Manual (staff set it up)"
    capabilities: frozenset[Capability] = frozenset()


MANUAL = "manual"
_METHODS = {
    **{c: c.value for c in Capability},
    Capability.ACCOUNT_SYNC: "sync_account",
    Capability.DATA_PATHS: "resolve_data_path",
    Capability.NOTEBOOK: "notebook_options",
}
_REGISTRY: dict[str, ComputeBackend] = {}


def register(backend: ComputeBackend) -> None:
    """Register (or replace) the entry for `backend.name`. Refuses an entry that declares a
    capability it does not implement, so `supports` never promises what is not there."""
    if not isinstance(backend, ComputeBackend) or not backend.name:
        raise TypeError(f"{backend!r} does not implement ComputeBackend")
    for capability in backend.capabilities:
        method = _METHODS[capability]
        if getattr(type(backend), method, None) in (None, getattr(BaseBackend, method)):
            raise TypeError(f"{backend.name} declares {capability.value} but does not implement it")
    _REGISTRY[backend.name] = backend


def unregister(name: str) -> None:
    """Remove the entry for `name` (tests that register a backend of their own)."""
    _REGISTRY.pop(name, None)


def registered() -> dict[str, ComputeBackend]:
    """Every entry by name (for docs, admin and tests)."""
    return dict(_REGISTRY)


def backend_for(facility: Facility) -> ComputeBackend:
    """The entry serving this facility: its backend's, or `manual` when that backend is not
    registered or the facility is not configured for it."""
    entry = _REGISTRY.get(facility.backend)
    if entry is None or not entry.is_configured(facility):
        return _REGISTRY.get(MANUAL) or ManualBackend()
    return entry


def supports(facility: Facility, capability: Capability) -> bool:
    """Whether the facility's entry declares `capability`."""
    return capability in backend_for(facility).capabilities


def is_connected(facility: Facility) -> bool:
    """Whether the portal itself can provision on this facility (else staff do it by hand)."""
    return supports(facility, Capability.PROVISION)


def backends_with(capability: Capability) -> list[str]:
    """Names of the registered backends declaring `capability` (for database filters)."""
    return sorted(name for name, entry in _REGISTRY.items() if capability in entry.capabilities)


def usage_source(backend: ComputeBackend) -> str:
    """The ledger source the backend's charges are recorded under (its name by default)."""
    return backend.usage_source or backend.name


def backend_choices() -> list[tuple[str, str]]:
    """(name, label) of every registered backend: the choices of `Facility.backend`."""
    return [(name, entry.label or name) for name, entry in sorted(_REGISTRY.items())]


def usage_source_choices() -> list[tuple[str, str]]:
    """(source, label) of every registered backend's charges: the backends' choices of
    `UsageRecord.source` (the allocations app adds staff's corrections)."""
    sources = {usage_source(entry): entry.label or entry.name for entry in _REGISTRY.values()}
    return sorted(sources.items())
