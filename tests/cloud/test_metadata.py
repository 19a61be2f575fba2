"""The emulator's instance metadata endpoint speaks IMDSv2 as EC2 does (token first, every read
with it, nothing without), and the agent's client reads it: instance id, role credentials
only when the instance has a profile, and a spot notice only once one is served."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from http.server import ThreadingHTTPServer

import pytest

from launcher.cloud.emulator import Metadata, _handler, send_notice
from launcher.cloud.imds import Imds

INSTANCE = {
    "InstanceId": "i-0abc",
    "InstanceType": "g5.xlarge",
    "ImageId": "ami-1",
    "Placement": {"AvailabilityZone": "us-east-1b"},
    "InstanceLifecycle": "spot",
}


@pytest.fixture
def endpoint(tmp_path):
    def start(role):
        notices = tmp_path / "i-0abc" / "imds"
        notices.mkdir(parents=True, exist_ok=True)
        meta = Metadata(
            instance=INSTANCE,
            user_data="#!/bin/bash\n",
            role=role,
            region="us-east-1",
            notices=notices,
        )
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(meta))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    servers: list = []
    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _status(request) -> int:
    try:
        with urllib.request.urlopen(request, timeout=5) as reply:
            return reply.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_reads_without_a_token_are_refused_and_a_token_opens_them(endpoint):
    url = endpoint("portal-role")
    assert _status(urllib.request.Request(f"{url}/latest/meta-data/instance-id")) == 401
    assert (
        _status(
            urllib.request.Request(
                f"{url}/latest/meta-data/instance-id",
                headers={"X-aws-ec2-metadata-token": "forged"},
            )
        )
        == 401
    )
    assert _status(urllib.request.Request(f"{url}/latest/api/token", method="PUT")) == 400
    imds = Imds(url)
    assert imds.instance_id() == "i-0abc"
    assert imds.get("meta-data/placement/availability-zone") == "us-east-1b"
    creds = json.loads(imds.get("meta-data/iam/security-credentials/portal-role"))
    assert creds["Code"] == "Success" and creds["AccessKeyId"] and creds["Token"]


def test_no_profile_means_no_credentials(endpoint):
    imds = Imds(endpoint(None))
    assert imds.get("meta-data/iam/security-credentials/") is None


def test_a_spot_notice_is_served_once_sent(endpoint, tmp_path):
    imds = Imds(endpoint("portal-role"))
    assert imds.get("meta-data/spot/instance-action") is None
    assert imds.get("meta-data/events/recommendations/rebalance") is None
    sent = send_notice(tmp_path, "i-0abc")
    assert json.loads(imds.get("meta-data/spot/instance-action")) == sent
    assert sent["action"] == "terminate"
    send_notice(tmp_path, "i-0abc", rebalance=True)
    assert "noticeTime" in json.loads(imds.get("meta-data/events/recommendations/rebalance"))


def test_the_agent_stops_its_job_and_reports_a_rebalance_recommendation(
    endpoint, tmp_path, moto_endpoint
):
    import boto3

    from launcher.cloud.agent import Job, NodeAgent
    from launcher.cloud.userdata import NodeConfig, WorkerSpec

    s3 = boto3.client("s3", region_name="us-east-1", endpoint_url=moto_endpoint)
    s3.create_bucket(Bucket="portal-test-agent")
    config = NodeConfig(
        bucket="portal-test-agent",
        region="us-east-1",
        prefix="acct/",
        cluster=1,
        node=2,
        node_token="w-1",
        role="worker",
        bundle_key="acct/bundles/x.tar.gz",
        bundle_sha256="0" * 64,
    )
    agent = NodeAgent(
        config=config,
        workdir=tmp_path / "work",
        s3=s3,
        imds=Imds(endpoint("portal-role")),
        poll=0.1,
    )
    assert agent.instance_id == "i-0abc" and agent.check_metadata() is None
    agent.job = Job(
        instance_id="i-0abc",
        s3=s3,
        root=tmp_path / "job",
        poll=0.1,
        spec=WorkerSpec(
            bucket=config.bucket,
            task_prefix="acct/tasks/t/",
            data_prefix="acct/data/",
            argv=["python", "-c", "pass"],
        ),
    )
    send_notice(tmp_path, "i-0abc", rebalance=True)
    assert agent.check_metadata() == "events/rebalance"
    assert agent.job.signalled and agent.interrupted.is_set()
    report = json.loads(
        s3.get_object(Bucket=config.bucket, Key="acct/instances/i-0abc/events/rebalance")[
            "Body"
        ].read()
    )
    assert report["kind"] == "events/rebalance" and "noticeTime" in report
    s3.put_object(
        Bucket=config.bucket,
        Key=config.assignment_key,
        Body=json.dumps(
            {
                "bucket": config.bucket,
                "task_prefix": "acct/tasks/u/",
                "data_prefix": "acct/data/",
                "argv": ["python", "-c", "pass"],
            }
        ).encode(),
    )
    assert agent.step() is False  # a machine being taken back takes no new task
