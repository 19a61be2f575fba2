"""Which compute backends a facility may name, and which ledger sources a usage record may carry.

The launcher's backend registry (launcher/backends/registry.py) owns both lists: a new backend
registers itself and needs no migration here. The allocations app sits below the launcher and
never imports it, so it reaches the registry through the dotted paths the settings name
(FACILITY_BACKEND_CHOICES, USAGE_SOURCE_CHOICES), resolved when a form, a serializer or
`full_clean` asks (the model fields take these functions as their `choices`).
"""

from __future__ import annotations

from django.conf import settings
from django.utils.module_loading import import_string

# Staff's audited correction of the ledger (services.usage_correct): the ledger is append-only,
# so a wrong charge is corrected by a new record, never edited.
CORRECTION = "correction"
DEFAULT_BACKEND = "local"  # what `make run` uses


def facility_backend_choices() -> list[tuple[str, str]]:
    """(name, label) of every registered compute backend."""
    return list(import_string(settings.FACILITY_BACKEND_CHOICES)())


def usage_source_choices() -> list[tuple[str, str]]:
    """(source, label) of every registered backend's charges, and staff's corrections."""
    return [*import_string(settings.USAGE_SOURCE_CHOICES)(), (CORRECTION, "Correction by staff")]
