"""Boundary fakes for what moto cannot do, used by tests and the bench (never by the portal).

- `capacity_errors`: RunInstances answers InsufficientInstanceCapacity (or any code) for chosen
  (instance type, zone, market) combinations, through botocore's own `before-parameter-build` event hook on
  every client the AWS backend creates; all other calls reach the moto server unchanged.
- `interrupt`: what AWS does to a spot worker: the two-minute notice served by the instance's
  (emulated) metadata endpoint, then, once the job has checkpointed or the grace time is over,
  the instance terminated in moto.
- `spot_request_status`: DescribeSpotInstanceRequests answers with chosen status codes per
  instance (moto has no spot requests for RunInstances launches, and never reclaims).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

from botocore.awsrequest import AWSResponse
from botocore.exceptions import ClientError

from launcher.cloud import aws
from launcher.cloud.emulator import send_notice


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
                raise ClientError({"Error": {"Code": code, "Message": "injected"}}, "RunInstances")

    def hook(client) -> None:
        if client.meta.service_model.service_name == "ec2":
            client.meta.events.register("before-parameter-build.ec2.RunInstances", before_call)

    aws.CLIENT_HOOKS.append(hook)
    try:
        yield refused
    finally:
        aws.CLIENT_HOOKS.remove(hook)


def interrupt(
    backend: aws.AwsClient,
    *,
    emulator_root: Path,
    task_prefix: str,
    instance_id: str,
    grace_seconds: float = 120.0,
    rebalance: bool = False,
) -> dict:
    """Serve the spot notice (or a rebalance recommendation) on the instance's metadata
    endpoint, wait (up to the grace time, AWS's two minutes) for its job to report a final
    status, then terminate the instance. Returns the notice, the status and the checkpoint
    metadata seen in S3 *before* the termination."""
    notice = send_notice(emulator_root, instance_id, rebalance=rebalance)
    deadline = time.monotonic() + grace_seconds
    status = None
    while time.monotonic() < deadline:
        status = backend.get_json(f"{task_prefix}status/{instance_id}.json")
        if status and status.get("state") in ("preempted", "succeeded", "failed"):
            break
        time.sleep(0.2)
    checkpoint = backend.get_json(f"{task_prefix}checkpoint-meta.json")
    has_checkpoint = backend.exists(f"{task_prefix}out/checkpoint.pt")
    backend.terminate([instance_id])
    return {
        "notice": notice,
        "status": status,
        "checkpoint": checkpoint,
        "checkpoint_in_s3": has_checkpoint,
    }


@contextlib.contextmanager
def spot_request_status(codes: dict[str, str]) -> Iterator[None]:
    """While active, DescribeSpotInstanceRequests reports a spot request per instance id in
    `codes` with that status code (e.g. `marked-for-termination`), answered by a botocore
    `before-call` hook instead of moto."""

    def before_call(**kwargs):
        # (the request is already serialized here; callers look up their own instance ids)
        requests = [
            {
                "SpotInstanceRequestId": f"sir-{iid[-8:]}",
                "InstanceId": iid,
                "State": "active" if code == "fulfilled" else "closed",
                "Status": {"Code": code, "Message": "injected"},
            }
            for iid, code in codes.items()
        ]
        return (
            AWSResponse("https://ec2.injected/", 200, {}, None),
            {"SpotInstanceRequests": requests, "ResponseMetadata": {"HTTPStatusCode": 200}},
        )

    def hook(client) -> None:
        if client.meta.service_model.service_name == "ec2":
            client.meta.events.register("before-call.ec2.DescribeSpotInstanceRequests", before_call)

    aws.CLIENT_HOOKS.append(hook)
    try:
        yield
    finally:
        aws.CLIENT_HOOKS.remove(hook)
