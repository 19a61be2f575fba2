"""The AWS backend: EC2 instances and an S3 prefix per allocation, through boto3.

The endpoint comes from AWS_ENDPOINT_URL (a moto server in tests). Nothing here imports Django.

Guarantees:
- Every instance is tagged with `portal:managed`, `portal:installation` (the portal
  installation that owns it: two portals sharing an account never see each other's instances,
  `find` filters on it), its allocation, cluster, node and role, and its launch `token`; `launch` looks the token up before calling RunInstances and passes it as
  `ClientToken`, so re-running a launch after a crash never starts a second instance (moto
  ignores ClientToken, the tag lookup covers it there).
- Errors are `BackendError`; capacity refusals are `CapacityError` (transient: another type,
  zone or market may succeed now, the same one later).
- No method touches a database, so callers can keep network calls outside transactions.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import logging
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from launcher.backends.errors import BackendError, check_name
from launcher.cloud.aws_access import AccessMixin

log = logging.getLogger(__name__)

TAG_PREFIX = "portal:"
MANAGED = "portal:managed"
INSTALLATION = "portal:installation"
# Error codes meaning "not here, not now": try another instance type, zone or market.
CAPACITY_CODES = frozenset(
    {
        "InsufficientInstanceCapacity",
        "InsufficientHostCapacity",
        "InsufficientCapacity",
        "SpotMaxPriceTooLow",
        "MaxSpotInstanceCountExceeded",
        "InstanceLimitExceeded",
        "Unsupported",
        "UnfulfillableCapacity",
    }
)
TRANSIENT_CODES = frozenset(
    {"RequestLimitExceeded", "Throttling", "InternalError", "ServiceUnavailable", "Unavailable"}
)
LIVE_STATES = ("pending", "running", "stopping", "stopped", "shutting-down")
# Applied to every boto3 client this module creates: the seam for fault injection in tests
# (botocore's own event hooks; see launcher/cloud/faults.py).
CLIENT_HOOKS: list[Callable[[Any], None]] = []


class CapacityError(BackendError):
    """AWS had no capacity (or the spot price was too low) for this type, zone and market."""

    def __init__(self, message: str, *, code: str) -> None:
        super().__init__(message, permanent=False)
        self.code = code


@dataclass(frozen=True)
class LaunchRequest:
    """One instance to start. `token` (8-64 safe characters) is unique per node launch attempt
    family: the same token always means the same instance."""

    token: str
    instance_type: str
    market: str  # "spot" | "on-demand"
    tags: dict[str, str]
    image_id: str
    user_data: str = ""
    zone: str | None = None
    instance_profile: str = ""  # IAM instance profile name: the instance's only credentials
    security_group_ids: tuple[str, ...] = ()


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
    image_id: str = ""


def _tags(raw: Iterable[dict]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in raw or ()}


def _instance(raw: dict, *, already: bool = False) -> Instance:
    return Instance(
        instance_id=raw["InstanceId"],
        state=raw["State"]["Name"],
        instance_type=raw["InstanceType"],
        zone=raw.get("Placement", {}).get("AvailabilityZone", ""),
        market="spot" if raw.get("InstanceLifecycle") == "spot" else "on-demand",
        tags=_tags(raw.get("Tags", ())),
        launch_time=raw.get("LaunchTime"),
        state_reason=(raw.get("StateReason") or {}).get("Code", ""),
        already_existed=already,
        image_id=raw.get("ImageId", ""),
    )


def _error(exc: Exception, what: str) -> BackendError:
    if isinstance(exc, ClientError):
        code = exc.response.get("Error", {}).get("Code", "")
        message = exc.response.get("Error", {}).get("Message", "")
        if code in CAPACITY_CODES:
            return CapacityError(f"{what}: {code}: {message}", code=code)
        if code == "InvalidParameterValue" and "instance profile" in message.lower():
            # IAM is eventually consistent: a new instance profile is unknown to EC2 for a
            # few seconds. The launch succeeds when retried.
            return BackendError(f"{what}: {code}: {message}", permanent=False)
        return BackendError(f"{what}: {code}: {message}", permanent=code not in TRANSIENT_CODES)
    return BackendError(f"{what}: {exc}", permanent=False)  # connection errors, timeouts


class AwsClient(AccessMixin):
    """EC2, S3, SSM and IAM for one facility (region, bucket). The cloud app (launcher.cloud)
    is its only caller: clusters, nodes and tasks there decide what to start; this class only
    speaks to AWS; the cloud app's `AwsBackend` (launcher/cloud/backend.py) is the registry
    entry."""

    def __init__(
        self, *, region: str, bucket: str, endpoint_url: str | None = None, installation: str = ""
    ) -> None:
        self.region = region
        # Written on every instance and volume, and part of every instance lookup.
        self.installation = installation
        self.bucket = check_name(bucket, "bucket")
        self.endpoint_url = endpoint_url or os.environ.get("AWS_ENDPOINT_URL") or None
        config = Config(
            retries={"max_attempts": 3, "mode": "standard"}, connect_timeout=5, read_timeout=30
        )
        self.ec2 = self._client("ec2", config)
        self.s3 = self._client("s3", config)
        self.ssm = self._client("ssm", config)
        self.iam = self._client("iam", config)

    def _client(self, service: str, config: Config) -> Any:
        client = boto3.session.Session().client(
            service, region_name=self.region, endpoint_url=self.endpoint_url, config=config
        )
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

    def exists(self, key: str) -> bool:
        try:
            self.s3.head_object(Bucket=self.bucket, Key=key)
            return True
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404", "NotFound"):
                return False
            raise _error(exc, f"head {key}") from exc
        except BotoCoreError as exc:
            raise _error(exc, f"head {key}") from exc

    def get_json(self, key: str) -> dict | None:
        """The object parsed as JSON, or None when it is absent or cannot be read whole yet: a
        read that races a worker's upload of the same key (seen against moto) is simply taken
        again on the next sync, as an absent one would be."""
        data = self.get_bytes(key)
        if not data:
            return None
        try:
            return json.loads(data)
        except ValueError:
            log.warning(
                "s3://%s/%s is not whole JSON yet; read again on the next sync", self.bucket, key
            )
            return None

    def list_keys(self, prefix: str) -> list[str]:
        keys: list[str] = []
        try:
            for page in self.s3.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=prefix
            ):
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
    def image_from_parameter(self, name: str) -> str:
        """The AMI id an SSM parameter names now (AWS publishes the current Deep Learning AMI
        and Amazon Linux images as public parameters under /aws/service/). Raises a permanent
        BackendError for a parameter that does not exist."""
        try:
            value = self.ssm.get_parameter(Name=name)["Parameter"]["Value"]
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ParameterNotFound":
                raise BackendError(
                    f"SSM parameter {name} does not exist in {self.region}", permanent=True
                ) from exc
            raise _error(exc, f"get_parameter {name}") from exc
        except BotoCoreError as exc:
            raise _error(exc, f"get_parameter {name}") from exc
        if not value.startswith("ami-"):
            raise BackendError(
                f"SSM parameter {name} holds {value!r}, not an AMI id", permanent=True
            )
        return value

    def find(self, **tags: str) -> list[Instance]:
        """Live (not terminated) instances carrying all these `portal:` tags."""
        if self.installation:
            tags = {**tags, "installation": self.installation}
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
            return [
                _instance(raw)
                for page in pages
                for res in page["Reservations"]
                for raw in res["Instances"]
            ]
        except (ClientError, BotoCoreError) as exc:
            raise _error(exc, "describe_instances") from exc

    def launch(self, request: LaunchRequest) -> Instance:
        """Start one instance, or return the one already started with this token. Idempotent.
        Raises CapacityError when AWS has no room for this type, zone and market."""
        existing = self.find(token=request.token)
        if existing:
            return Instance(**{**existing[0].__dict__, "already_existed": True})
        tags = {
            MANAGED: "1",
            f"{TAG_PREFIX}token": request.token,
            **{f"{TAG_PREFIX}{k}": v for k, v in request.tags.items()},
        }
        if self.installation:
            tags[INSTALLATION] = self.installation
        kwargs: dict[str, Any] = dict(
            ImageId=request.image_id,
            MinCount=1,
            MaxCount=1,
            InstanceType=request.instance_type,
            ClientToken=request.token,
            UserData=request.user_data,
            # IMDSv2 only: a token (PUT) before every read, one hop, so nothing the instance
            # runs in a container or forwards can reach its role's credentials.
            MetadataOptions={
                "HttpTokens": "required",
                "HttpEndpoint": "enabled",
                "HttpPutResponseHopLimit": 1,
            },
            TagSpecifications=[
                {"ResourceType": rt, "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}
                for rt in ("instance", "volume")
            ],
        )
        if request.instance_profile:
            kwargs["IamInstanceProfile"] = {"Name": request.instance_profile}
        if request.security_group_ids:
            kwargs["SecurityGroupIds"] = list(request.security_group_ids)
        if request.zone:
            kwargs["Placement"] = {"AvailabilityZone": request.zone}
        if request.market == "spot":
            kwargs["InstanceMarketOptions"] = {
                "MarketType": "spot",
                "SpotOptions": {
                    "SpotInstanceType": "one-time",
                    "InstanceInterruptionBehavior": "terminate",
                },
            }
        try:
            raw = self.ec2.run_instances(**kwargs)["Instances"][0]
        except (ClientError, BotoCoreError) as exc:
            raise _error(exc, f"run_instances {request.instance_type} {request.market}") from exc
        return _instance(raw)

    def user_data(self, instance_id: str) -> str:
        """The instance's user data as text ('' if none)."""
        try:
            value = self.ec2.describe_instance_attribute(
                InstanceId=instance_id, Attribute="userData"
            )["UserData"].get("Value", "")
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

    def _wrap(self, exc: Exception, what: str) -> BackendError:
        return _error(exc, what)

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
        reply = self._call(
            "describe_spot_instance_requests",
            Filters=[{"Name": "instance-id", "Values": list(instance_ids)}],
        )
        return {
            r["InstanceId"]: (r.get("Status") or {}).get("Code", "")
            for r in reply.get("SpotInstanceRequests", ())
            if r.get("InstanceId")
        }

    def spot_prices(self, instance_types: list[str]) -> dict[str, float]:
        """The lowest current spot price per instance type across zones (describe_spot_price_
        history). On moto every price is a 0.00001 dummy; callers must treat it as unknown."""
        reply = self._call(
            "describe_spot_price_history",
            InstanceTypes=list(instance_types),
            ProductDescriptions=["Linux/UNIX", "Linux/UNIX (Amazon VPC)"],
            StartTime=dt.datetime.now(dt.UTC),
        )
        best: dict[str, float] = {}
        for row in reply.get("SpotPriceHistory", ()):
            price = float(row["SpotPrice"])
            best[row["InstanceType"]] = min(price, best.get(row["InstanceType"], price))
        return best

    # -- the allocation's prefix ---------------------------------------------------------------
    def ensure_prefix(self, *, name: str) -> bool:
        """The bucket and the allocation's prefix (`<name>/`) exist. Idempotent; True when the
        prefix was new. Caps are the portal's own (budget and GPU-hours checked before each
        launch), not AWS's."""
        check_name(name, "account")
        self.ensure_bucket()
        marker = f"{name}/.portal-account"
        if self.get_bytes(marker) is not None:
            return False
        self.put_json(marker, {"account": name})
        return True
