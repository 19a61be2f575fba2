"""How many runs a facility really runs at once, said before a launch and on the sweep page:
a sweep's `concurrency` is an upper bound, the facility's free slots decide (issue 22: cells
ran one at a time under "at most 2 at once", and an API job waited minutes for a slot with
nothing saying so beforehand). A backend that knows its slots declares `capacity` in the
registry and is asked; elsewhere the scheduler decides and the sentence says so."""
from __future__ import annotations

from allocations.models import Facility

from .backends.registry import Capability, backend_for


def capacity_note(facility: Facility, *, concurrency: int | None = None) -> str:
    """One sentence: the facility's slots, how many are in use now, and what that means."""
    backend = backend_for(facility)
    if Capability.CAPACITY not in backend.capabilities:
        return (f"{facility.name}'s scheduler decides when each run starts; a run waits while "
                "the cluster or the allocation's limits are full.")
    capacity = backend.capacity(facility=facility)
    slots, in_use = capacity.slots, capacity.in_use
    free = slots - in_use
    sentence = (f"{facility.name} runs {slots} run{'s' if slots != 1 else ''} at a time (one per "
                f"GPU or CPU slot, all users together); {in_use} of {slots} in use now, {free} free.")
    if concurrency is not None and concurrency > slots:
        sentence += f" A concurrency above {slots} cannot help here."
    return sentence + " Runs beyond the free slots wait, each saying \"waiting for a free slot\"."


def gpus_refusal(facility: Facility, gpus: int) -> str | None:
    """Why a run needing `gpus` can never start on `facility` (more than all its slots), or
    None when it can, or when the facility's backend does not know its slots."""
    backend = backend_for(facility)
    if Capability.CAPACITY not in backend.capabilities:
        return None
    slots = backend.capacity(facility=facility).slots
    if gpus <= slots:
        return None
    return (f"{facility.name} runs at most {slots} GPU{'s' if slots != 1 else ''} (or CPU "
            f"slot{'s' if slots != 1 else ''}) at a time, so a run needing {gpus} could never "
            f"start there: ask for at most {slots}.")
