"""Cloud resources belong to one installation: its id is in every tag the portal writes and in
every instance lookup, so two portals sharing one AWS account (here: one moto server) never
adopt or terminate each other's instances. Without a configured id, one is generated once and
stored."""

from __future__ import annotations

from decimal import Decimal

import pytest

from launcher.cloud.aws import AwsClient, LaunchRequest
from launcher.cloud.client import installation_id
from launcher.cloud.models import Installation
from launcher.cloud.services import cloud_reconcile, cluster_sync, task_launch
from launcher.cloud.services.clusters import node_create, node_launch
from launcher.cloud.workload import TINY, ctxray_argv

pytestmark = pytest.mark.django_db(transaction=True)


def test_two_installations_on_one_account_do_not_see_each_others_instances(moto_endpoint, dlami):
    a = AwsClient(
        region="us-east-1",
        bucket="portal-shared",
        endpoint_url=moto_endpoint,
        installation="portal-a",
    )
    b = AwsClient(
        region="us-east-1",
        bucket="portal-shared",
        endpoint_url=moto_endpoint,
        installation="portal-b",
    )
    mine = a.launch(
        LaunchRequest(
            token="nodeaaaa-0",
            instance_type="g5.xlarge",
            market="spot",
            image_id=dlami,
            tags={"node": "7", "role": "worker"},
        )
    )
    assert mine.tags["portal:installation"] == "portal-a"
    assert [i.instance_id for i in a.find(node="7")] == [mine.instance_id]
    assert b.find(node="7") == [] and b.find(managed="1") == []
    # The same launch token from the other installation starts its own instance.
    theirs = b.launch(
        LaunchRequest(
            token="nodeaaaa-0",
            instance_type="g5.xlarge",
            market="spot",
            image_id=dlami,
            tags={"node": "7", "role": "worker"},
        )
    )
    assert theirs.instance_id != mine.instance_id and not theirs.already_existed


def test_a_portal_neither_adopts_nor_reaps_another_installations_worker(
    settings, allocation, cluster, researcher, cloud_facility, moto_endpoint, dlami
):
    # Installation A's portal has a worker running for a node row with this id and token.
    settings.PORTAL_INSTALLATION_ID = "portal-b"
    node = node_create(cluster=cluster, instance_type="g5.xlarge", gpus=1)
    other = AwsClient(
        region=cluster.region,
        bucket=cluster.bucket,
        endpoint_url=moto_endpoint,
        installation="portal-a",
    )
    foreign = other.launch(
        LaunchRequest(
            token=f"{node.token}-0",
            instance_type="g5.xlarge",
            market="spot",
            image_id=dlami,
            tags={"cluster": str(cluster.pk), "node": str(node.pk), "role": "worker"},
        )
    )
    # Installation B launches its own instance for its node instead of adopting A's.
    launched = node_launch(node_id=node.pk, user_data="#!/bin/bash\n")
    assert launched.instance_id and launched.instance_id != foreign.instance_id
    assert launched.image_source != "adopted"
    # B's reconciler sees only B's instances: A's worker is no orphan of B's to terminate.
    report = cloud_reconcile(facility=cloud_facility)
    assert foreign.instance_id not in report.orphans_terminated
    assert [i.instance_id for i in other.find(managed="1")] == [foreign.instance_id]
    assert other.describe([foreign.instance_id])[foreign.instance_id].state == "running"


def test_every_tag_the_portal_writes_names_the_installation(
    settings, allocation, cluster, researcher, moto_endpoint
):
    settings.PORTAL_INSTALLATION_ID = "portal-c"
    task_launch(
        allocation=allocation,
        by=researcher,
        instance_type="g5.xlarge",
        argv=ctxray_argv({**TINY, "epochs": 1}),
        data_prefix="x/",
        hours=Decimal(1),
    )
    cluster_sync(cluster_id=cluster.pk)
    client = AwsClient(
        region=cluster.region,
        bucket=cluster.bucket,
        endpoint_url=moto_endpoint,
        installation="portal-c",
    )
    instances = client.find(cluster=str(cluster.pk))
    assert instances and all(i.tags["portal:installation"] == "portal-c" for i in instances)
    volumes = client.ec2.describe_volumes(
        Filters=[{"Name": "tag:portal:cluster", "Values": [str(cluster.pk)]}]
    )["Volumes"]
    assert all({"Key": "portal:installation", "Value": "portal-c"} in v["Tags"] for v in volumes)
    # Provisioning (before the setting) tagged the bucket, the role and the security group with
    # the id generated and stored then.
    stored = Installation.objects.get().value
    bucket = client.s3.get_bucket_tagging(Bucket=cluster.bucket)["TagSet"]
    assert {"Key": "portal:installation", "Value": stored} in bucket
    role = client.iam.list_role_tags(RoleName=cluster.instance_profile)["Tags"]
    assert {"Key": "portal:installation", "Value": stored} in role
    group = client.ec2.describe_security_groups(GroupIds=[cluster.security_group_id])
    assert {"Key": "portal:installation", "Value": stored} in group["SecurityGroups"][0]["Tags"]


def test_without_a_setting_the_id_is_generated_once_and_kept(settings):
    settings.PORTAL_INSTALLATION_ID = ""
    first = installation_id()
    assert len(first) == 16 and int(first, 16) >= 0
    assert installation_id() == first and Installation.objects.count() == 1
    settings.PORTAL_INSTALLATION_ID = "site-a"
    assert installation_id() == "site-a"
