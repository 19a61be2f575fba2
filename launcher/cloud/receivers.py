"""React to allocation facts: an allocation that may no longer be used stops its workers.
(The money check of a launch is `AwsBackend.price_launch`, called by the launcher's
`job_launch` / `sweep_launch` under the allocation lock.)"""

from __future__ import annotations

from django.dispatch import receiver

from allocations.models import Allocation
from allocations.signals import allocation_status_changed

from .models import Cluster
from .tasks import stop_workers


@receiver(allocation_status_changed, dispatch_uid="cloud.stop_on_status")
def _stop_workers(sender, allocation_id: int, to_state: str, **kwargs) -> None:
    if to_state not in Allocation.BLOCKED:  # the one home of "nothing may run"
        return
    for cluster_id in Cluster.objects.filter(allocation_id=allocation_id).values_list(
        "pk", flat=True
    ):
        stop_workers.delay(cluster_id, f"The allocation is {to_state}.")
