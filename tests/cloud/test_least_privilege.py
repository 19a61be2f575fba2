"""The instance profile's policy, as IAM stores it in moto, allows the allocation's own prefix
and refuses another allocation's. moto does not implement IAM's policy simulator
(simulate_principal_policy), so the stored document is evaluated by
launcher.cloud.aws_policy.policy_allows, whose own rules are checked first."""

from __future__ import annotations

import pytest

from launcher.cloud.aws_policy import policy_allows, worker_policy
from launcher.cloud.client import aws_client
from launcher.cloud.models import Cluster
from launcher.provisioning import allocation_provision
from tests.factories import AllocationFactory

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_evaluator_lets_a_deny_win_and_needs_every_condition():
    policy = {
        "Statement": [
            {"Effect": "Allow", "Action": "s3:*", "Resource": "arn:aws:s3:::b/*"},
            {"Effect": "Deny", "Action": "s3:DeleteObject", "Resource": "arn:aws:s3:::b/keep/*"},
            {
                "Effect": "Allow",
                "Action": "s3:ListBucket",
                "Resource": "arn:aws:s3:::b",
                "Condition": {"StringLike": {"s3:prefix": ["p/*"]}},
            },
        ]
    }
    assert policy_allows(policy, action="s3:DeleteObject", resource="arn:aws:s3:::b/x")
    assert not policy_allows(policy, action="s3:DeleteObject", resource="arn:aws:s3:::b/keep/x")
    assert policy_allows(
        policy, action="s3:ListBucket", resource="arn:aws:s3:::b", context={"s3:prefix": "p/x"}
    )
    assert not policy_allows(policy, action="s3:ListBucket", resource="arn:aws:s3:::b")
    assert not policy_allows(policy, action="ec2:RunInstances", resource="*")


def test_the_instance_profile_allows_its_prefix_and_refuses_another_allocation_s(
    allocation, cluster, project, cloud_facility
):
    other_alloc = allocation_provision(
        allocation_id=AllocationFactory(
            project=project, facility=cloud_facility, status="provisioning"
        ).pk
    )
    other = Cluster.objects.get(allocation=other_alloc)
    backend = aws_client(cluster)
    policy = backend.role_policy(cluster.instance_profile)  # as IAM stored it
    assert policy == worker_policy(bucket=cluster.bucket, prefix=cluster.prefix)
    assert other.instance_profile != cluster.instance_profile
    obj = f"arn:aws:s3:::{cluster.bucket}/"
    bucket = f"arn:aws:s3:::{cluster.bucket}"
    for action in ("s3:GetObject", "s3:PutObject"):
        assert policy_allows(policy, action=action, resource=f"{obj}{cluster.prefix}tasks/t/out/x")
        assert not policy_allows(policy, action=action, resource=f"{obj}{other.prefix}tasks/t/x")
        assert not policy_allows(policy, action=action, resource=f"{obj}elsewhere/x")
    assert policy_allows(
        policy,
        action="s3:ListBucket",
        resource=bucket,
        context={"s3:prefix": f"{cluster.prefix}data/"},
    )
    assert not policy_allows(
        policy, action="s3:ListBucket", resource=bucket, context={"s3:prefix": other.prefix}
    )
    assert not policy_allows(policy, action="s3:ListBucket", resource=bucket)  # whole bucket
    assert not policy_allows(policy, action="s3:DeleteObject", resource=f"{obj}{cluster.prefix}x")
    for action in ("ec2:TerminateInstances", "iam:PassRole", "ssm:GetParameter"):
        assert not policy_allows(policy, action=action, resource="*")
