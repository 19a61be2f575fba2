"""The allowed moves of each state machine (DESIGN.md), as tables rather than scattered ifs."""

from __future__ import annotations

from .models import Allocation, AllocationRequest

R = AllocationRequest.Status
A = Allocation.Status

REQUEST_MOVES: dict[str, tuple[str, ...]] = {
    R.DRAFT: (R.SUBMITTED, R.WITHDRAWN),
    R.SUBMITTED: (R.APPROVED, R.REJECTED, R.CHANGES_REQUESTED, R.WITHDRAWN),
    R.CHANGES_REQUESTED: (R.SUBMITTED, R.WITHDRAWN),
    R.APPROVED: (),
    R.REJECTED: (),
    R.WITHDRAWN: (),
}

ALLOCATION_MOVES: dict[str, tuple[str, ...]] = {
    A.PROVISIONING: (A.ACTIVE, A.FAILED, A.CLOSED),
    A.ACTIVE: (A.SUSPENDED, A.EXHAUSTED, A.EXPIRED, A.CLOSED),
    A.SUSPENDED: (A.ACTIVE, A.EXPIRED, A.CLOSED),
    A.EXHAUSTED: (A.ACTIVE, A.EXPIRED, A.CLOSED),
    # A failed provisioning may be retried once its cause is fixed.
    A.FAILED: (A.PROVISIONING, A.CLOSED),
    # An approved extension brings an expired allocation back into use.
    A.EXPIRED: (A.ACTIVE, A.CLOSED),
    A.CLOSED: (),
}
