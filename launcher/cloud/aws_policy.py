"""IAM policy documents for the cloud workers, and a small evaluator to check them. No Django.

The worker's role may read and write objects under its allocation's prefix and list only that
prefix: nothing else in the bucket, no other AWS service. (The agent needs no more: it reads its
configuration and task from S3, writes outputs, status and notices there, and learns about
interruptions from the instance metadata service, which needs no IAM permission.)

`policy_allows` evaluates a policy document the way IAM does for the parts these documents
use (explicit Deny wins over Allow, wildcards in Action and Resource, StringLike/StringEquals
conditions); moto accepts policies but does not implement the policy simulator, so the tests use
this to prove the policy refuses another allocation's prefix.
"""

from __future__ import annotations

import fnmatch
import json
from typing import Any

EC2_TRUST_POLICY: dict[str, Any] = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {"Service": "ec2.amazonaws.com"},
            "Action": "sts:AssumeRole",
        }
    ],
}


def worker_policy(*, bucket: str, prefix: str) -> dict[str, Any]:
    """Least privilege for one allocation's workers: objects under `bucket/prefix` only."""
    prefix = prefix.rstrip("/") + "/"
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "AllocationObjects",
                "Effect": "Allow",
                "Action": ["s3:GetObject", "s3:PutObject"],
                "Resource": f"arn:aws:s3:::{bucket}/{prefix}*",
            },
            {
                "Sid": "ListAllocationPrefixOnly",
                "Effect": "Allow",
                "Action": "s3:ListBucket",
                "Resource": f"arn:aws:s3:::{bucket}",
                "Condition": {"StringLike": {"s3:prefix": [f"{prefix}*"]}},
            },
        ],
    }


def _list(value: Any) -> list:
    return value if isinstance(value, list) else [value]


def _match(patterns: Any, value: str, *, case: bool) -> bool:
    if case:
        return any(fnmatch.fnmatchcase(value, p) for p in _list(patterns))
    return any(fnmatch.fnmatchcase(value.lower(), p.lower()) for p in _list(patterns))


def _conditions_hold(conditions: dict, context: dict[str, str]) -> bool:
    for operator, checks in conditions.items():
        for key, wanted in checks.items():
            value = context.get(key)
            if value is None:
                return False  # a missing key never satisfies a String* condition
            if operator == "StringLike" and not _match(wanted, value, case=True):
                return False
            if operator == "StringEquals" and value not in _list(wanted):
                return False
            if operator not in ("StringLike", "StringEquals"):
                return False  # unknown operator: refuse rather than guess
    return True


def _applies(statement: dict, action: str, resource: str, context: dict[str, str]) -> bool:
    return (
        _match(statement.get("Action", []), action, case=False)
        and _match(statement.get("Resource", []), resource, case=True)
        and _conditions_hold(statement.get("Condition", {}), context)
    )


def policy_allows(
    policy: dict | str, *, action: str, resource: str, context: dict[str, str] | None = None
) -> bool:
    """True when the policy allows `action` on `resource`: some Allow statement matches and no
    Deny statement does (IAM's evaluation for a single identity policy)."""
    doc = json.loads(policy) if isinstance(policy, str) else policy
    context = context or {}
    statements = _list(doc.get("Statement", []))
    if any(
        s.get("Effect") == "Deny" and _applies(s, action, resource, context) for s in statements
    ):
        return False
    return any(
        s.get("Effect") == "Allow" and _applies(s, action, resource, context) for s in statements
    )
