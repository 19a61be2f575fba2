"""What an instance is launched with, checked against moto as AWS would see it: the image from
the SSM parameter (recorded on the node), the allocation's instance profile, IMDSv2 required, a
security group with no inbound rule, tags everywhere, and user data that carries no secret and
names a bundle whose checksum matches."""

from __future__ import annotations

import hashlib
import io
import tarfile
import threading
from decimal import Decimal

import boto3
import pytest
import requests

from launcher.cloud import bundle
from launcher.cloud import emulator as emulator_module
from launcher.cloud.client import WORKER_IMAGE_PARAMETER, aws_client, facility_image
from launcher.cloud.emulator import LOCAL_IMAGE_PARAMETER, Emulator
from launcher.cloud.models import CloudTask, Node
from launcher.cloud.services import task_launch
from launcher.cloud.userdata import parse
from launcher.cloud.workload import TINY, ctxray_argv
from tests.cloud.conftest import IMAGE_PARAMETER
from tests.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def _launch(allocation, researcher) -> CloudTask:
    task = task_launch(
        allocation=allocation,
        by=researcher,
        instance_type="g5.xlarge",
        argv=ctxray_argv({**TINY, "epochs": 1}),
        data_prefix="x/",
        hours=Decimal("1"),
    )
    return CloudTask.objects.select_related("node").get(pk=task.pk)


def _raw_instance(moto_endpoint, instance_id: str) -> dict:
    ec2 = boto3.client("ec2", region_name="us-east-1", endpoint_url=moto_endpoint)
    return ec2.describe_instances(InstanceIds=[instance_id])["Reservations"][0]["Instances"][0]


def test_the_worker_image_comes_from_the_ssm_parameter_and_is_recorded_on_the_node(
    allocation, cluster, researcher, dlami, moto_endpoint
):
    task = _launch(allocation, researcher)
    worker = task.node
    assert (worker.image_id, worker.image_source) == (dlami, f"ssm:{IMAGE_PARAMETER}")
    assert _raw_instance(moto_endpoint, worker.instance_id)["ImageId"] == dlami
    assert list(cluster.nodes.all()) == [worker]  # no head node, so no second image


def test_without_a_setting_the_worker_image_is_aws_s_deep_learning_ami_parameter(cloud_facility):
    cloud_facility.backend_settings.pop("image_ssm_parameter")
    assert facility_image(cloud_facility) == ("ssm", WORKER_IMAGE_PARAMETER)
    assert WORKER_IMAGE_PARAMETER.startswith("/aws/service/deeplearning/ami/x86_64/")
    assert "gpu-pytorch" in WORKER_IMAGE_PARAMETER
    cloud_facility.backend_settings["image_id"] = "ami-0123456789abcdef0"
    assert facility_image(cloud_facility) == ("id", "ami-0123456789abcdef0")


def test_a_missing_image_parameter_fails_the_task_with_the_reason(
    allocation, cluster, researcher, cloud_facility
):
    cloud_facility.backend_settings["image_ssm_parameter"] = "/portal-test/no/such/parameter"
    cloud_facility.save()
    task = _launch(allocation, researcher)
    assert task.state == "failed" and "/portal-test/no/such/parameter" in task.state_reason
    assert Node.objects.get(pk=task.node_id).state == "failed"


def test_instances_run_as_the_allocation_profile_with_imdsv2_and_no_inbound_access(
    allocation, cluster, researcher, moto_endpoint
):
    task = _launch(allocation, researcher)
    cluster.refresh_from_db()
    backend = aws_client(cluster)
    for node in cluster.nodes.all():
        raw = _raw_instance(moto_endpoint, node.instance_id)
        assert raw["MetadataOptions"]["HttpTokens"] == "required"
        assert raw["IamInstanceProfile"]["Arn"].endswith(f"/{cluster.instance_profile}")
        assert [g["GroupId"] for g in raw["SecurityGroups"]] == [cluster.security_group_id]
    assert backend.inbound_rules(cluster.security_group_id) == []
    ec2 = boto3.client("ec2", region_name="us-east-1", endpoint_url=moto_endpoint)
    group = ec2.describe_security_groups(GroupIds=[cluster.security_group_id])["SecurityGroups"][0]
    assert {"Key": "portal:managed", "Value": "1"} in group["Tags"]
    iam = boto3.client("iam", region_name="us-east-1", endpoint_url=moto_endpoint)
    role_tags = {
        t["Key"]: t["Value"] for t in iam.list_role_tags(RoleName=cluster.instance_profile)["Tags"]
    }
    assert role_tags["portal:allocation"] == str(allocation.pk)
    s3 = boto3.client("s3", region_name="us-east-1", endpoint_url=moto_endpoint)
    bucket_tags = s3.get_bucket_tagging(Bucket=cluster.bucket)["TagSet"]
    assert {"Key": "portal:managed", "Value": "1"} in bucket_tags
    assert task.node.instance_id


def test_the_user_data_holds_no_secret_and_names_a_bundle_that_matches_its_checksum(
    allocation, cluster, researcher
):
    task = _launch(allocation, researcher)
    backend = aws_client(cluster)
    text = backend.user_data(task.node.instance_id)
    for secret in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "testing", "aws_session_token"):
        assert secret not in text
    assert "systemctl enable --now portal-worker.service" in text
    config = parse(text)
    assert config is not None and config.node == task.node_id and config.prefix == cluster.prefix
    assert config.bundle_key.startswith(f"{cluster.prefix}bundles/portal-worker-")
    assert config.bundle_sha256[:12] in config.bundle_key
    data = backend.get_bytes(config.bundle_key)
    assert hashlib.sha256(data).hexdigest() == config.bundle_sha256
    names = tarfile.open(fileobj=io.BytesIO(data), mode="r:gz").getnames()
    assert "launcher/cloud/agent.py" in names and "launcher/workloads/ctxray/trainer.py" in names
    assert not [n for n in names if n.startswith(("portal/", "allocations/"))]
    assignment = backend.get_json(config.assignment_key)
    assert assignment["task_prefix"] == task.prefix and assignment["argv"] == task.argv


def test_the_bundle_is_reproducible_and_changes_name_with_its_code(tmp_path):
    first, again = bundle.build(), bundle.build()
    assert (first.name, first.data) == (again.name, again.data)
    copy = tmp_path / "repo"
    for rel in first.files:
        (copy / rel).parent.mkdir(parents=True, exist_ok=True)
        (copy / rel).write_bytes((bundle.REPO / rel).read_bytes())
    assert bundle.build(copy).sha256 == first.sha256
    (copy / "launcher/cloud/agent.py").write_text("# changed\n")
    assert bundle.build(copy).name != first.name


def test_seed_demo_points_the_local_cloud_at_the_emulator_s_image_parameter_once(cloud_facility):
    from launcher.cloud.demo import seed_local_image

    cloud_facility.backend_settings.pop("image_ssm_parameter")
    cloud_facility.save()
    assert seed_local_image() is True
    cloud_facility.refresh_from_db()
    assert cloud_facility.backend_settings["image_ssm_parameter"] == LOCAL_IMAGE_PARAMETER
    assert seed_local_image() is False  # re-running changes nothing


def test_the_emulator_publishes_its_image_parameter_again_when_it_is_gone(moto_endpoint, tmp_path):
    """A reset of moto (by hand, or moto restarted) clears SSM; the `local-cloud` demo facility's
    launches would then fail with "No image" until the emulator restarted. It checks and
    publishes the parameter again instead."""
    ssm = boto3.session.Session(region_name="us-east-1").client("ssm", endpoint_url=moto_endpoint)
    emulator = Emulator(endpoint=moto_endpoint, region="us-east-1", root=tmp_path)

    image = emulator.ensure_local_image()  # absent after each test's reset
    assert image is not None and image.startswith("ami-")
    assert ssm.get_parameter(Name=LOCAL_IMAGE_PARAMETER)["Parameter"]["Value"] == image
    assert emulator.ensure_local_image() is None  # there: nothing written

    requests.post(f"{moto_endpoint}/moto-api/reset", timeout=10)
    with pytest.raises(ssm.exceptions.ParameterNotFound):
        ssm.get_parameter(Name=LOCAL_IMAGE_PARAMETER)
    assert emulator.ensure_local_image() == image
    assert ssm.get_parameter(Name=LOCAL_IMAGE_PARAMETER)["Parameter"]["Value"] == image


def test_the_running_emulator_checks_again_on_its_own(moto_endpoint, tmp_path, monkeypatch):
    """run_forever, not only the method: a reset while it runs is mended within one check."""
    monkeypatch.setattr(emulator_module, "IMAGE_CHECK_S", 0.2)
    ssm = boto3.session.Session(region_name="us-east-1").client("ssm", endpoint_url=moto_endpoint)

    def published() -> bool:
        try:
            return bool(ssm.get_parameter(Name=LOCAL_IMAGE_PARAMETER))
        except ssm.exceptions.ParameterNotFound:
            return False

    stop = threading.Event()
    loop = threading.Thread(
        target=Emulator(
            endpoint=moto_endpoint, region="us-east-1", root=tmp_path, poll=0.05
        ).run_forever,
        args=(stop,),
    )
    loop.start()
    try:
        for round_ in range(2):  # published at start, then again after a reset
            wait_for(
                published,
                timeout=30,
                every=0.05,  # a loaded machine
                what="the worker image published",
                describe=lambda n=round_: f"not published again (round {n})",
            )
            if round_ == 0:
                requests.post(f"{moto_endpoint}/moto-api/reset", timeout=10)
    finally:
        stop.set()
        loop.join(timeout=10)
