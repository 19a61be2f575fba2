"""How many runs a facility really runs at once, said before a launch and on the sweep page:
a sweep's `concurrency` is an upper bound, the facility's free slots decide (issue 22: cells
ran one at a time under "at most 2 at once", and an API job waited minutes for a slot with
nothing saying so beforehand). Only the local backend knows its slots here; elsewhere the
scheduler decides and the sentence says so. The figures come from the facility's registry
entry (`slots()`), so no backend is named here."""
from __future__ import annotations

from allocations.models import Facility

from .backends.registry import backend_for


def capacity_note(facility: Facility, *, concurrency: int | None = None) -> str:
    """One sentence: the facility's slots, how many are in use now, and what that means."""
    found = backend_for(facility).slots(facility)
    if found is None:
        return (f"{facility.name}'s scheduler decides when each run starts; a run waits while "
                "the cluster or the allocation's limits are full.")
    slots, in_use = found
    free = slots - in_use
    sentence = (f"{facility.name} runs {slots} run{'s' if slots != 1 else ''} at a time (one per "
                f"GPU or CPU slot, all users together); {in_use} of {slots} in use now, {free} free.")
    if concurrency is not None and concurrency > slots:
        sentence += f" A concurrency above {slots} cannot help here."
    return sentence + " Runs beyond the free slots wait, each saying \"waiting for a free slot\"."
