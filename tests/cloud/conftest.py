"""The cloud tests' world: their own moto server (reset before each test, so the shared one on
port 5000 is left alone), an AWS-backed facility with single- and quad-GPU node types, the
bundled price catalogue and its worker image published as an SSM parameter, a provisioned
allocation, and the instance emulator (which runs each instance's real user data) as a real
process."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path

import boto3
import pytest
import requests

from launcher.cloud import aws, clock
from launcher.cloud.models import Cluster
from launcher.cloud.services import cluster_sync, price_catalogue_load
from tests.factories import AllocationFactory, FacilityFactory, NodeTypeFactory
from tests.waiting import wait_for
from tests.worker import stop_process

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def moto_endpoint():
    """A moto server of our own, in its own process: the agent uploads checkpoints of a
    hundred-odd MB, and a server thread inside the test process would compete with the test's
    own polling for the interpreter lock (a run once starved the uploads for two minutes)."""
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    port = _free_port()
    server = subprocess.Popen(
        [str(Path(sys.executable).with_name("moto_server")), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            requests.get(f"{endpoint}/moto-api/", timeout=2)
            break
        except requests.ConnectionError:
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the moto server did not start") from None
            time.sleep(0.2)
    yield endpoint
    stop_process(server)


@pytest.fixture(autouse=True)
def _cloud(moto_endpoint, settings):
    requests.post(f"{moto_endpoint}/moto-api/reset", timeout=10)
    settings.AWS_ENDPOINT_URL = moto_endpoint
    clock.reset()
    hooks = list(aws.CLIENT_HOOKS)
    yield
    aws.CLIENT_HOOKS[:] = hooks
    clock.reset()


# moto reserves /aws/... names as AWS does, so the tests publish their "Deep Learning AMI" under
# a parameter of their own and name it in the facility's settings (the default is AWS's).
IMAGE_PARAMETER = "/portal-test/deeplearning/x86_64/pytorch/latest/ami-id"


@pytest.fixture(scope="session")
def amazon_image(moto_endpoint) -> str:
    """One of the AMIs moto lists as Amazon's, picked once a session: listing them all takes
    seconds, and moto's reset keeps its bundled images and their ids."""
    ec2 = boto3.session.Session(region_name="us-east-1").client("ec2", endpoint_url=moto_endpoint)
    return max(i["ImageId"] for i in ec2.describe_images(Owners=["amazon"])["Images"])


@pytest.fixture
def dlami(moto_endpoint, amazon_image) -> str:
    """An AMI id published under IMAGE_PARAMETER in moto's SSM, as AWS publishes the DLAMI."""
    session = boto3.session.Session(region_name="us-east-1")
    ec2 = session.client("ec2", endpoint_url=moto_endpoint)
    assert ec2.describe_images(ImageIds=[amazon_image])["Images"]  # still there after the reset
    session.client("ssm", endpoint_url=moto_endpoint).put_parameter(
        Name=IMAGE_PARAMETER,
        Value=amazon_image,
        Type="String",
        DataType="aws:ec2:image",
        Overwrite=True,
    )
    return amazon_image


@pytest.fixture
def cloud_facility(db, dlami):
    facility = FacilityFactory(
        slug="local-cloud",
        kind="cloud",
        backend="aws",
        # head_instance_type: a setting of older versions (which launched a head node), kept
        # to show it is read harmlessly: no head is launched.
        backend_settings={
            "region": "us-east-1",
            "head_instance_type": "t3.large",
            "bucket": "portal-test-cloud",
            "zones": ["us-east-1a", "us-east-1b"],
            "image_ssm_parameter": IMAGE_PARAMETER,
        },
    )
    NodeTypeFactory(
        facility=facility,
        name="g5.xlarge",
        instance_type="g5.xlarge",
        accelerator="NVIDIA A10G",
        accelerators_per_node=1,
        price_on_demand=Decimal("1.006"),
        price_spot=Decimal("0.362"),
    )
    NodeTypeFactory(
        facility=facility,
        name="g5.12xlarge",
        instance_type="g5.12xlarge",
        accelerator="NVIDIA A10G",
        accelerators_per_node=4,
        price_on_demand=Decimal("5.672"),
        price_spot=Decimal("2.105"),
    )
    price_catalogue_load()
    return facility


@pytest.fixture
def allocation(project, cloud_facility):
    """A granted allocation on the cloud facility, provisioned (bucket, prefix, cluster)."""
    from launcher.provisioning import allocation_provision

    alloc = AllocationFactory(
        project=project,
        facility=cloud_facility,
        status="provisioning",
        gpu_hours=Decimal("100"),
        budget=Decimal("50"),
    )
    return allocation_provision(allocation_id=alloc.pk)


@pytest.fixture
def cluster(allocation):
    return Cluster.objects.get(allocation=allocation)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    """Keep each phase's report on the test item, so a fixture's teardown knows whether the
    test failed (the emulator then prints what its instances logged)."""
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


LOG_TAIL = 4000  # characters of each log an emulator prints after a failed test


def _print_instance_logs(root: Path, emulator_log: Path) -> None:
    """What the emulator and every instance it ran logged (the tails): cloud-init, the agent's
    unit, each task's job; pytest shows it with the failure ("Captured stdout teardown")."""
    logs = [
        emulator_log,
        *sorted(root.glob("*/cloud-init-output.log")),
        *sorted(root.glob("*/fs/var/log/*.log")),
        *sorted(root.glob("*/fs/var/lib/portal/tasks/*/job.log")),
    ]
    for path in logs:
        text = path.read_text(errors="replace") if path.is_file() else "(none)"
        print(f"----- {path} (last {LOG_TAIL} characters) -----\n{text[-LOG_TAIL:]}")


@pytest.fixture
def emulator(moto_endpoint, tmp_path, request):
    """The instance emulator, as its own process: each running instance's user data runs in a
    sandbox under the returned folder, with its own IMDSv2 endpoint. After a failed test it
    prints what the instances logged."""
    root = tmp_path / "instances"
    log_path = tmp_path / "emulator.log"
    log = open(log_path, "w")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "launcher.cloud.emulator",
            "run",
            "--endpoint",
            moto_endpoint,
            "--region",
            "us-east-1",
            "--root",
            str(root),
            "--poll",
            "0.3",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    yield root
    stop_process(proc)
    log.close()
    call = getattr(request.node, "report_call", None)
    if call is not None and call.failed:
        _print_instance_logs(root, log_path)


def _describe_cluster(cluster) -> str:
    """The cluster's tasks and nodes as the portal sees them (for a timeout's message)."""
    cluster.refresh_from_db()
    tasks = [
        f"task {t.pk} {t.state} attempt {t.attempt} node {t.node_id} progress {t.progress}"
        for t in cluster.tasks.order_by("pk")
    ]
    nodes = [
        f"node {n.pk} {n.role} {n.state} {n.instance_id or '-'}"
        for n in cluster.nodes.order_by("pk")
    ]
    return f"cluster {cluster.pk} {cluster.state}: " + "; ".join(tasks + nodes)


# How long a drive may wait for a run that trains to its end (no timing is asserted: the bound
# is only how long a stuck run takes to fail).
TRAINS_TO_END = 300.0


def drive(cluster, until, timeout: float = 120.0, interval: float = 1.0):
    """Play the 5-second beat (faster): sync the cluster until `until()` is truthy. A beat a
    second: each sync reads the instances, spot requests and four or five S3 objects per task
    from moto (launcher/cloud/services/sync.py, `_observe`), and polling faster only takes the
    CPU the instances' agents and trainers need."""
    return wait_for(
        until,
        step=lambda: cluster_sync(cluster_id=cluster.pk),
        timeout=timeout,
        every=interval,
        describe=lambda: _describe_cluster(cluster),
    )
