"""The AWS backend: EC2 instances and an S3 prefix per allocation, through boto3.

The endpoint comes from AWS_ENDPOINT_URL (a moto server in tests). Nothing here imports Django.

Guarantees:
- Every instance is tagged with `portal:managed`, its allocation, cluster, node and role, and
  its launch `token`; `launch` looks the token up before calling RunInstances and passes it as
  `ClientToken`, so re-running a launch after a crash never starts a second instance (moto
  ignores ClientToken, the tag lookup covers it there).
- Errors are `BackendError`; capacity refusals are `CapacityError` (transient: another type,
  zone or market may succeed now, the same one later).
- No method touches a database, so callers can keep network calls outside transactions.
"""
from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from launcher.backends.base import (
    AccountState,
    Backend,
    BackendError,
    JobSpec,
    JobState,
    JobStatus,
    NodeInfo,
    SubmitResult,
    UsageRow,
    check_name,
)

TAG_PREFIX = "portal:"
MANAGED = "portal:managed"
# Error codes meaning "not here, not now": try another instance type, zone or market.
CAPACITY_CODES = frozenset({
    "InsufficientInstanceCapacity", "InsufficientHostCapacity", "InsufficientCapacity",
    "SpotMaxPriceTooLow", "MaxSpotInstanceCountExceeded", "InstanceLimitExceeded",
    "Unsupported", "UnfulfillableCapacity",
})
TRANSIENT_CODES = frozenset({"RequestLimitExceeded", "Throttling", "InternalError",
                             "ServiceUnavailable", "Unavailable"})
LIVE_STATES = ("pending", "running", "stopping", "stopped", "shutting-down")
# Applied to every boto3 client this module creates: the seam for fault injection in tests
# (botocore's own event hooks; see launcher/cloud/faults.py).
CLIENT_HOOKS: list[Callable[[Any], None]] = []


class CapacityError(BackendError):
    """AWS had no capacity (or the spot price was too low) for this type, zone and market."""

    def __init__(self, message: str, *, code: str) -> None:
        super().__init__(message, transient=True)
        self.code = code


@dataclass(frozen=True)
class LaunchRequest:
    """One instance to start. `token` (8-64 safe characters) is unique per node launch attempt
    family: the same token always means the same instance."""

    token: str
    instance_type: str
    market: str  # "spot" | "on-demand"
    tags: dict[str, str]
    user_data: str = ""
    zone: str | None = None
    image_id: str | None = None


@dataclass(frozen=True)
class Instance:
    """An EC2 instance as AWS describes it now."""

    instance_id: str
    state: str
    instance_type: str
    zone: str
    market: str
    tags: dict[str, str] = field(default_factory=dict)
    launch_time: dt.datetime | None = None
    state_reason: str = ""
    already_existed: bool = False


def _tags(raw: Iterable[dict]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in raw or ()}


def _instance(raw: dict, *, already: bool = False) -> Instance:
    return Instance(
        instance_id=raw["InstanceId"], state=raw["State"]["Name"],
        instance_type=raw["InstanceType"], zone=raw.get("Placement", {}).get("AvailabilityZone", ""),
        market="spot" if raw.get("InstanceLifecycle") == "spot" else "on-demand",
        tags=_tags(raw.get("Tags", ())), launch_time=raw.get("LaunchTime"),
        state_reason=(raw.get("StateReason") or {}).get("Code", ""), already_existed=already,
    )


def _error(exc: Exception, what: str) -> BackendError:
    if isinstance(exc, ClientError):
        code = exc.response.get("Error", {}).get("Code", "")
        message = exc.response.get("Error", {}).get("Message", "")
        if code in CAPACITY_CODES:
            return CapacityError(f"{what}: {code}: {message}", code=code)
        return BackendError(f"{what}: {code}: {message}", transient=code in TRANSIENT_CODES)
    return BackendError(f"{what}: {exc}", transient=True)  # connection errors, timeouts


class AwsBackend(Backend):
    """EC2 + S3 for one facility (region, bucket, default worker type and image)."""

    def __init__(self, *, region: str, bucket: str, endpoint_url: str | None = None,
                 worker_instance_type: str = "g5.xlarge", image_id: str | None = None) -> None:
        self.region = region
        self.bucket = check_name(bucket, "bucket")
        self.endpoint_url = endpoint_url or os.environ.get("AWS_ENDPOINT_URL") or None
        self.worker_instance_type = worker_instance_type
        self._image_id = image_id
        config = Config(retries={"max_attempts": 3, "mode": "standard"}, connect_timeout=5,
                        read_timeout=30)
        self.ec2 = self._client("ec2", config)
        self.s3 = self._client("s3", config)

    def _client(self, service: str, config: Config) -> Any:
        client = boto3.session.Session().client(
            service, region_name=self.region, endpoint_url=self.endpoint_url, config=config)
        for hook in CLIENT_HOOKS:
            hook(client)
        return client

    # -- storage -----------------------------------------------------------------------------
    def ensure_bucket(self) -> None:
        """Create the facility's bucket if it is missing. Idempotent."""
        try:
            self.s3.head_bucket(Bucket=self.bucket)
            return
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") not in ("404", "NoSuchBucket", "NotFound"):
                raise _error(exc, "head_bucket") from exc
        kwargs: dict[str, Any] = {"Bucket": self.bucket}
        if self.region != "us-east-1":
            kwargs["CreateBucketConfiguration"] = {"LocationConstraint": self.region}
        try:
            self.s3.create_bucket(**kwargs)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "BucketAlreadyOwnedByYou":
                raise _error(exc, "create_bucket") from exc

    def put_bytes(self, key: str, data: bytes) -> None:
        try:
            self.s3.put_object(Bucket=self.bucket, Key=key, Body=data)
        except (ClientError, BotoCoreError) as exc:
            raise _error(exc, f"put {key}") from exc

    def put_json(self, key: str, data: dict) -> None:
        self.put_bytes(key, json.dumps(data).encode())

    def get_bytes(self, key: str) -> bytes | None:
        """The object's bytes, or None if there is no such key."""
        try:
            return self.s3.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                return None
            raise _error(exc, f"get {key}") from exc
        except BotoCoreError as exc:
            raise _error(exc, f"get {key}") from exc

    def get_json(self, key: str) -> dict | None:
        data = self.get_bytes(key)
        return json.loads(data) if data else None

    def list_keys(self, prefix: str) -> list[str]:
        keys: list[str] = []
        try:
            for page in self.s3.get_paginator("list_objects_v2").paginate(
                    Bucket=self.bucket, Prefix=prefix):
                keys.extend(obj["Key"] for obj in page.get("Contents", ()))
        except (ClientError, BotoCoreError) as exc:
            raise _error(exc, f"list {prefix}") from exc
        return keys

    def upload_dir(self, folder: Path, prefix: str) -> int:
        """Upload every file under `folder` to `prefix` (same relative paths). Returns files."""
        count = 0
        for path in sorted(Path(folder).rglob("*")):
            if path.is_file():
                self.put_bytes(prefix + path.relative_to(folder).as_posix(), path.read_bytes())
                count += 1
        return count

    # -- instances ---------------------------------------------------------------------------
    def image_id(self) -> str:
        if self._image_id:
            return self._image_id
        try:
            images = self.ec2.describe_images(Owners=["amazon"], Filters=[
                {"Name": "architecture", "Values": ["x86_64"]}])["Images"]
        except (ClientError, BotoCoreError) as exc:
            raise _error(exc, "describe_images") from exc
        if not images:
            raise BackendError("no x86_64 image found in the region", transient=False)
        self._image_id = sorted(images, key=lambda i: i["ImageId"])[0]["ImageId"]
        return self._image_id

    def find(self, **tags: str) -> list[Instance]:
        """Live (not terminated) instances carrying all these `portal:` tags."""
        filters = [{"Name": f"tag:{TAG_PREFIX}{k}", "Values": [v]} for k, v in tags.items()]
        filters.append({"Name": "instance-state-name", "Values": list(LIVE_STATES)})
        return self._describe(Filters=filters)

    def describe(self, instance_ids: list[str]) -> dict[str, Instance]:
        """These instances by id (terminated ones too, while AWS still lists them); ids AWS
        no longer knows are absent."""
        if not instance_ids:
            return {}
        found: dict[str, Instance] = {}
        for iid in instance_ids:  # one bad id fails a batch call, so ask one by one on error
            try:
                found.update({i.instance_id: i for i in self._describe(InstanceIds=[iid])})
            except BackendError as exc:
                if "InvalidInstanceID" not in exc.message:
                    raise
        return found

    def _describe(self, **kwargs: Any) -> list[Instance]:
        try:
            pages = self.ec2.get_paginator("describe_instances").paginate(**kwargs)
            return [_instance(raw) for page in pages for res in page["Reservations"]
                    for raw in res["Instances"]]
        except (ClientError, BotoCoreError) as exc:
            raise _error(exc, "describe_instances") from exc

    def launch(self, request: LaunchRequest) -> Instance:
        """Start one instance, or return the one already started with this token. Idempotent.
        Raises CapacityError when AWS has no room for this type, zone and market."""
        existing = self.find(token=request.token)
        if existing:
            return Instance(**{**existing[0].__dict__, "already_existed": True})
        tags = {MANAGED: "1", f"{TAG_PREFIX}token": request.token,
                **{f"{TAG_PREFIX}{k}": v for k, v in request.tags.items()}}
        kwargs: dict[str, Any] = dict(
            ImageId=request.image_id or self.image_id(), MinCount=1, MaxCount=1,
            InstanceType=request.instance_type, ClientToken=request.token,
            UserData=request.user_data,
            TagSpecifications=[{"ResourceType": rt, "Tags": [{"Key": k, "Value": v}
                                                             for k, v in tags.items()]}
                               for rt in ("instance", "volume")],
        )
        if request.zone:
            kwargs["Placement"] = {"AvailabilityZone": request.zone}
        if request.market == "spot":
            kwargs["InstanceMarketOptions"] = {"MarketType": "spot", "SpotOptions": {
                "SpotInstanceType": "one-time", "InstanceInterruptionBehavior": "terminate"}}
        try:
            raw = self.ec2.run_instances(**kwargs)["Instances"][0]
        except (ClientError, BotoCoreError) as exc:
            raise _error(exc, f"run_instances {request.instance_type} {request.market}") from exc
        return _instance(raw)

    def user_data(self, instance_id: str) -> str:
        """The instance's user data as text ('' if none)."""
        import base64

        try:
            value = self.ec2.describe_instance_attribute(
                InstanceId=instance_id, Attribute="userData")["UserData"].get("Value", "")
        except (ClientError, BotoCoreError) as exc:
            raise _error(exc, "describe_instance_attribute") from exc
        return base64.b64decode(value).decode() if value else ""

    def terminate(self, instance_ids: list[str]) -> None:
        """Terminate these instances. Idempotent: already-terminated ones are fine."""
        if instance_ids:
            self._call("terminate_instances", InstanceIds=list(instance_ids))

    def stop(self, instance_ids: list[str]) -> None:
        """Stop (not terminate) these instances: the head node keeps its disk. Idempotent."""
        if instance_ids:
            self._call("stop_instances", InstanceIds=list(instance_ids))

    def start(self, instance_ids: list[str]) -> None:
        """Start stopped instances again. Idempotent for running ones."""
        if instance_ids:
            self._call("start_instances", InstanceIds=list(instance_ids))

    def _call(self, method: str, **kwargs: Any) -> dict:
        try:
            return getattr(self.ec2, method)(**kwargs)
        except (ClientError, BotoCoreError) as exc:
            raise _error(exc, method) from exc

    def spot_request_states(self, instance_ids: list[str]) -> dict[str, str]:
        """Spot request status code per instance (e.g. 'marked-for-termination',
        'instance-terminated-by-price'), for instances launched through a spot request."""
        if not instance_ids:
            return {}
        reply = self._call("describe_spot_instance_requests", Filters=[
            {"Name": "instance-id", "Values": list(instance_ids)}])
        return {r["InstanceId"]: (r.get("Status") or {}).get("Code", "")
                for r in reply.get("SpotInstanceRequests", ()) if r.get("InstanceId")}

    def spot_prices(self, instance_types: list[str]) -> dict[str, float]:
        """The lowest current spot price per instance type across zones (describe_spot_price_
        history). On moto every price is a 0.00001 dummy; callers must treat it as unknown."""
        reply = self._call("describe_spot_price_history", InstanceTypes=list(instance_types),
                           ProductDescriptions=["Linux/UNIX", "Linux/UNIX (Amazon VPC)"],
                           StartTime=dt.datetime.now(dt.UTC))
        best: dict[str, float] = {}
        for row in reply.get("SpotPriceHistory", ()):
            price = float(row["SpotPrice"])
            best[row["InstanceType"]] = min(price, best.get(row["InstanceType"], price))
        return best

    # -- the Backend interface -----------------------------------------------------------------
    def ensure_account(self, *, name: str, users: list[str], gpu_minutes: int) -> AccountState:
        """The bucket and the account's prefix exist. Idempotent. Caps are the portal's own
        (budget and GPU-hours checked before each launch), not AWS's."""
        check_name(name, "account")
        self.ensure_bucket()
        marker = f"{name}/.portal-account"
        changed = self.get_bytes(marker) is None
        if changed:
            self.put_json(marker, {"account": name, "users": sorted(users)})
        return AccountState(name=name, users=frozenset(users), gpu_minutes=gpu_minutes,
                            blocked=False, changed=changed)

    def block_account(self, *, name: str) -> None:
        """Terminate the account's workers (the head node stays, stopped data is kept)."""
        self.terminate([i.instance_id for i in self.find(account=name, role="worker")])

    def unblock_account(self, *, name: str) -> None:
        """Nothing to undo on AWS: launches are gated by the portal."""

    def set_cap(self, *, name: str, gpu_minutes: int) -> None:
        """Caps are enforced by the portal before each launch; nothing to set on AWS."""

    def submit(self, spec: JobSpec) -> SubmitResult:
        """Stage `bundle_dir` under `<account>/jobs/<token>/` and start one spot worker that runs
        `script` with `args` (user data carries them as JSON, never as shell text)."""
        from launcher.cloud.userdata import WorkerSpec, render

        check_name(spec.account, "account")
        prefix = f"{spec.account}/jobs/{spec.token}/"
        self.upload_dir(spec.bundle_dir, prefix + "bundle/")
        worker = WorkerSpec(bucket=self.bucket, task_prefix=prefix, data_prefix=prefix + "bundle/",
                            argv=["bash", "{data}/" + spec.script, *spec.args])
        inst = self.launch(LaunchRequest(token=spec.token, instance_type=self.worker_instance_type,
                                         market="spot", tags={"account": spec.account,
                                                              "role": "worker"},
                                         user_data=render(worker)))
        return SubmitResult(job_id=inst.instance_id, token=spec.token, workdir=prefix,
                            output_pattern=prefix + "out/", already_submitted=inst.already_existed)

    def find_job_by_token(self, token: str) -> str | None:
        found = self.find(token=token)
        return found[0].instance_id if found else None

    def status(self, job_ids: list[str]) -> dict[str, JobStatus]:
        """A job is its worker instance: running while it runs, unknown once it is gone."""
        states = {"pending": JobState.PENDING, "running": JobState.RUNNING,
                  "shutting-down": JobState.PREEMPTED, "terminated": JobState.UNKNOWN}
        found = self.describe(job_ids)
        return {jid: JobStatus(job_id=jid, state=states.get(found[jid].state, JobState.UNKNOWN)
                               if jid in found else JobState.UNKNOWN) for jid in job_ids}

    def cancel(self, job_id: str) -> None:
        self.terminate([job_id])

    def usage_since(self, *, account: str, since: dt.datetime) -> list[UsageRow]:
        """One row per live instance of the account: seconds run since `since`."""
        now = dt.datetime.now(dt.UTC)
        rows = []
        for inst in self.find(account=account):
            start = max(inst.launch_time or now, since)
            rows.append(UsageRow(job_id=inst.instance_id, step="", account=account,
                                 state=inst.state, elapsed_seconds=int((now - start).total_seconds()),
                                 gpus=int(inst.tags.get(f"{TAG_PREFIX}gpus", "0")), start=start,
                                 end=None))
        return rows

    def read_file(self, path: str, *, max_bytes: int = 65536) -> bytes:
        data = self.get_bytes(path) or b""
        return data[-max_bytes:]

    def start_nodes(self, *, count: int) -> list[NodeInfo]:
        """Start `count` untagged-for-a-job spot workers of the default type."""
        import uuid

        started = []
        for _ in range(count):
            inst = self.launch(LaunchRequest(token=uuid.uuid4().hex, market="spot",
                                             instance_type=self.worker_instance_type,
                                             tags={"role": "worker"}))
            started.append(NodeInfo(node_id=inst.instance_id, state=inst.state))
        return started

    def stop_nodes(self, *, node_ids: list[str]) -> list[NodeInfo]:
        self.terminate(node_ids)
        return [NodeInfo(node_id=n, state="shutting-down") for n in node_ids]
