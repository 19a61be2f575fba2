"""Who the instances are and what they may reach: an IAM role and instance profile per cluster
(the allocation's S3 prefix only), a security group per facility (no inbound rule at all), the
bucket's tags. Mixed into AwsClient; no Django.

Every create is preceded by a look-up, so each method is idempotent and safe to retry."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from launcher.backends.errors import BackendError
from launcher.cloud.aws_policy import EC2_TRUST_POLICY, worker_policy

POLICY_NAME = "portal-allocation-prefix"


def _code(exc: ClientError) -> str:
    return exc.response.get("Error", {}).get("Code", "")


def _iam_tags(tags: dict[str, str]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in sorted(tags.items())]


class AccessMixin:
    """IAM and security-group plumbing for AwsClient (which provides iam, ec2, s3, _wrap)."""

    iam: Any
    ec2: Any
    s3: Any
    bucket: str
    _wrap: Callable[[Exception, str], BackendError]

    def ensure_worker_profile(
        self, *, name: str, prefix: str, tags: dict[str, str], boundary: str = ""
    ) -> str:
        """An IAM role `name` that EC2 may assume, whose only permissions are the
        `worker_policy` for `bucket/prefix`, in an instance profile of the same name; created
        under the permissions boundary `boundary` (a policy ARN) when one is given, which the
        portal's own IAM policy can require (docs/aws-portal-iam-policy.json). The policy is
        rewritten on every call (so a changed prefix or bucket takes effect). Returns the
        instance profile name."""
        try:
            try:
                extra = {"PermissionsBoundary": boundary} if boundary else {}
                self.iam.create_role(
                    RoleName=name,
                    Tags=_iam_tags(tags),
                    AssumeRolePolicyDocument=json.dumps(EC2_TRUST_POLICY),
                    Description="Portal workers of one allocation",
                    **extra,
                )
            except ClientError as exc:
                if _code(exc) != "EntityAlreadyExists":
                    raise
            self.iam.put_role_policy(
                RoleName=name,
                PolicyName=POLICY_NAME,
                PolicyDocument=json.dumps(worker_policy(bucket=self.bucket, prefix=prefix)),
            )
            try:
                self.iam.create_instance_profile(InstanceProfileName=name, Tags=_iam_tags(tags))
            except ClientError as exc:
                if _code(exc) != "EntityAlreadyExists":
                    raise
            roles = self.iam.get_instance_profile(InstanceProfileName=name)["InstanceProfile"][
                "Roles"
            ]
            if not any(r["RoleName"] == name for r in roles):
                self.iam.add_role_to_instance_profile(InstanceProfileName=name, RoleName=name)
        except (ClientError, BotoCoreError) as exc:
            raise self._wrap(exc, f"instance profile {name}") from exc
        return name

    def role_policy(self, name: str) -> dict:
        """The inline policy of role `name` as AWS stores it."""
        try:
            doc = self.iam.get_role_policy(RoleName=name, PolicyName=POLICY_NAME)["PolicyDocument"]
        except (ClientError, BotoCoreError) as exc:
            raise self._wrap(exc, f"get_role_policy {name}") from exc
        return json.loads(doc) if isinstance(doc, str) else doc

    def ensure_security_group(
        self, *, name: str, tags: dict[str, str], vpc_id: str | None = None
    ) -> str:
        """A security group with no inbound rule (workers dial out to S3 and the package
        mirrors; nothing dials in: no SSH, no open port). Returns its id."""
        filters = [{"Name": "group-name", "Values": [name]}]
        if vpc_id:
            filters.append({"Name": "vpc-id", "Values": [vpc_id]})
        try:
            found = self.ec2.describe_security_groups(Filters=filters)["SecurityGroups"]
            if found:
                return found[0]["GroupId"]
            kwargs: dict[str, Any] = dict(
                GroupName=name,
                Description="Portal workers: no inbound access",
                TagSpecifications=[{"ResourceType": "security-group", "Tags": _iam_tags(tags)}],
            )
            if vpc_id:
                kwargs["VpcId"] = vpc_id
            return self.ec2.create_security_group(**kwargs)["GroupId"]
        except (ClientError, BotoCoreError) as exc:
            raise self._wrap(exc, f"security group {name}") from exc

    def inbound_rules(self, group_id: str) -> list[dict]:
        try:
            group = self.ec2.describe_security_groups(GroupIds=[group_id])["SecurityGroups"][0]
        except (ClientError, BotoCoreError) as exc:
            raise self._wrap(exc, f"describe_security_groups {group_id}") from exc
        return group.get("IpPermissions", [])

    def tag_bucket(self, tags: dict[str, str]) -> None:
        try:
            self.s3.put_bucket_tagging(Bucket=self.bucket, Tagging={"TagSet": _iam_tags(tags)})
        except (ClientError, BotoCoreError) as exc:
            raise self._wrap(exc, f"tag bucket {self.bucket}") from exc
