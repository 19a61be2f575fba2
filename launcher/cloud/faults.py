"""Boundary fakes for what moto cannot do, used by tests and the bench (never by the portal).

- `capacity_errors`: RunInstances answers InsufficientInstanceCapacity (or any code) for chosen
  (instance type, zone, market) combinations, through botocore's own `before-parameter-build` event hook on
  every client the AWS backend creates; all other calls reach the moto server unchanged.
- `interrupt`: what AWS does to a spot worker: the two-minute notice (written where the agent
  polls, as the metadata endpoint would serve it), then, once the job has checkpointed or the
  grace time is over, the instance terminated in moto.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import json
import time
from collections.abc import Iterator

from botocore.exceptions import ClientError

from launcher.backends import aws


@contextlib.contextmanager
def capacity_errors(refuse: dict[tuple[str, str | None, str | None], str]) -> Iterator[list]:
    """While active, RunInstances for a matching (type, zone, market) raises that error code;
    a None zone or market matches any. Yields the list of refused calls."""
    refused: list[dict] = []

    def before_call(params, **kwargs):
        itype = params.get("InstanceType")
        zone = (params.get("Placement") or {}).get("AvailabilityZone")
        market = "spot" if params.get("InstanceMarketOptions") else "on-demand"
        for (t, z, m), code in refuse.items():
            if t == itype and z in (None, zone) and m in (None, market):
                refused.append({"type": itype, "zone": zone, "market": market, "code": code})
                raise ClientError({"Error": {"Code": code, "Message": "injected"}},
                                  "RunInstances")

    def hook(client) -> None:
        if client.meta.service_model.service_name == "ec2":
            client.meta.events.register("before-parameter-build.ec2.RunInstances", before_call)

    aws.CLIENT_HOOKS.append(hook)
    try:
        yield refused
    finally:
        aws.CLIENT_HOOKS.remove(hook)


def interrupt(backend: aws.AwsBackend, *, notice_prefix: str, task_prefix: str,
              instance_id: str, grace_seconds: float = 60.0) -> dict:
    """Send the spot notice for `instance_id`, wait (up to the grace time) for its job to report
    a final status, then terminate the instance. Returns the notice and the status seen."""
    notice = {"action": "terminate",
              "time": (dt.datetime.now(dt.UTC) + dt.timedelta(minutes=2)).strftime(
                  "%Y-%m-%dT%H:%M:%SZ")}
    backend.put_bytes(f"{notice_prefix}{instance_id}/spot/instance-action",
                      json.dumps(notice).encode())
    deadline = time.monotonic() + grace_seconds
    status = None
    while time.monotonic() < deadline:
        status = backend.get_json(f"{task_prefix}status/{instance_id}.json")
        if status and status.get("state") in ("preempted", "succeeded", "failed"):
            break
        time.sleep(0.2)
    backend.terminate([instance_id])
    return {"notice": notice, "status": status}
