"""Benchmark: the cloud launcher on the local loop (moto + the instance emulator running each
instance's real user data), and spot versus
on-demand cost of a 1,000-epoch sweep from the price catalogue (Brás and Valadão's comparison).

Measured here: (1) task launch to the worker's job reporting `running` (one spot worker, no head node;
moto starts instances instantly, so this is the portal's own overhead plus the bootstrap (bundle
fetch and unpack, agent start under the systemd shim), the agent's data fetch and the trainer's
start), (2) spot notice to the job running again on a replacement worker from its
S3 checkpoint. Both drive the sync at 1 s (the beat runs every 5 s: add up to 5 s on a real
deployment). Needs PostgreSQL (DATABASE_URL; a throwaway test database is created) and starts
its own moto server. Run: python bench/bench_cloud.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
os.environ.setdefault("SECRET_KEY", "bench-only")
os.environ.setdefault("CELERY_TASK_ALWAYS_EAGER", "true")
os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("DATABASE_URL", "postgres://portal:portal@127.0.0.1:5432/portal_cloud")

# The seed (Bras and Valadao, Table I and Fig. 2): g2.2xlarge, EUR/h, epochs/min on one GPU server.
SEED = {"on-demand": 0.702, "spot": 0.065, "epochs_per_min": 2.0}
EPOCHS = 1000
RUN_EPOCHS = 10  # the local run: enough that the notice lands mid-training, even under load


def local_loop(endpoint: str) -> dict:
    from django.conf import settings
    from django.contrib.auth import get_user_model

    from allocations.models import Project
    from launcher.cloud import faults
    from launcher.cloud.client import aws_client
    from launcher.cloud.models import CloudTask, Cluster, Interruption
    from launcher.cloud.services import cluster_sync, price_catalogue_load, task_launch
    from launcher.cloud.workload import TINY, ctxray_argv, stage_synthetic_dataset
    from launcher.provisioning import allocation_provision
    from tests.factories import AllocationFactory, FacilityFactory, NodeTypeFactory
    from tests.waiting import wait_for

    settings.AWS_ENDPOINT_URL = endpoint
    price_catalogue_load()
    from launcher.cloud.emulator import LOCAL_IMAGE_PARAMETER, Emulator

    root = Path(tempfile.mkdtemp())
    Emulator(endpoint=endpoint, region="us-east-1", root=root).publish_local_image()
    facility = FacilityFactory(
        slug="bench-cloud",
        kind="cloud",
        backend="aws",
        backend_settings={
            "region": "us-east-1",
            "bucket": "portal-bench-cloud",
            "image_ssm_parameter": LOCAL_IMAGE_PARAMETER,
        },
    )
    NodeTypeFactory(
        facility=facility, name="g5.xlarge", instance_type="g5.xlarge", accelerators_per_node=1
    )
    user = get_user_model().objects.create(username="bench")
    project = Project.objects.create(code="BEN-CHC-001", title="bench", pi=user)
    alloc = AllocationFactory(
        project=project, facility=facility, status="provisioning", budget=Decimal("100")
    )
    alloc = allocation_provision(allocation_id=alloc.pk)
    cluster = Cluster.objects.get(allocation=alloc)
    data = stage_synthetic_dataset(cluster=cluster)
    sync = lambda: cluster_sync(cluster_id=cluster.pk)  # noqa: E731
    agent = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "launcher.cloud.emulator",
            "run",
            "--endpoint",
            endpoint,
            "--root",
            str(root),
            "--poll",
            "0.3",
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    try:
        t0 = time.monotonic()
        task = task_launch(
            allocation=alloc,
            by=None,
            instance_type="g5.xlarge",
            data_prefix=data,
            argv=ctxray_argv({**TINY, "epochs": RUN_EPOCHS}),
            hours=Decimal("1"),
        )
        launched = time.monotonic() - t0
        wait_for(
            lambda: CloudTask.objects.get(pk=task.pk).state == "running",
            step=sync,
            timeout=300,
            every=1.0,
            what="the task running",
        )
        running = time.monotonic() - t0
        backend = aws_client(cluster)
        wait_for(
            lambda: (
                (CloudTask.objects.get(pk=task.pk).progress.get("epoch") or 0) >= 2
                and backend.get_json(f"{task.prefix}checkpoint-meta.json")
            ),
            step=sync,
            timeout=300,
            every=1.0,
            what="epoch 2 and its checkpoint",
        )
        node = CloudTask.objects.get(pk=task.pk).node
        t1 = time.monotonic()
        faults.interrupt(
            backend, emulator_root=root, task_prefix=task.prefix, instance_id=node.instance_id
        )
        wait_for(
            lambda: (
                Interruption.objects.filter(node=node, resumed_at__isnull=False).exists()
                or CloudTask.objects.get(pk=task.pk).state in CloudTask.FINAL
            ),
            step=sync,
            timeout=300,
            every=1.0,
            what="the task resumed (or ended)",
        )
        resumed = time.monotonic() - t1
        wait_for(
            lambda: CloudTask.objects.get(pk=task.pk).state in CloudTask.FINAL,
            step=sync,
            timeout=300,
            every=1.0,
            what="the task's end",
        )
        done = CloudTask.objects.get(pk=task.pk)
        interruption = Interruption.objects.filter(node=node).first()
        lost = interruption.work_lost_seconds if interruption else float("nan")
        if interruption is None or interruption.resumed_at is None:
            resumed = float("nan")  # the job ended before the notice landed or resumed unseen
    finally:
        agent.terminate()
        agent.wait(timeout=15)
    return {
        "launch_call_s": launched,
        "to_running_s": running,
        "notice_to_resumed_s": resumed,
        "final_state": done.state,
        "epochs": done.progress.get("epoch"),
        "work_lost_s": lost,
    }


def sweep_costs() -> list[tuple[str, float, float, float]]:
    """1,000 epochs at the seed's single-GPU-server throughput, priced from the catalogue."""
    from launcher.cloud.models import PriceCatalogueEntry

    hours = EPOCHS / SEED["epochs_per_min"] / 60
    rows = [
        ("g2.2xlarge (seed, EUR, 2015)", hours * SEED["on-demand"], hours * SEED["spot"], hours)
    ]
    for itype in ("g4dn.xlarge", "g5.xlarge", "g5.12xlarge", "p4d.24xlarge", "p5.48xlarge"):
        prices = {
            e.market: float(e.price_per_hour)
            for e in PriceCatalogueEntry.objects.filter(region="us-east-1", instance_type=itype)
        }
        if "spot" in prices and "on-demand" in prices:
            rows.append(
                (
                    f"{itype} (catalogue, USD)",
                    hours * prices["on-demand"],
                    hours * prices["spot"],
                    hours,
                )
            )
    return rows


def main() -> int:
    import django
    from django.test.runner import DiscoverRunner
    from django.test.utils import setup_test_environment
    from moto.server import ThreadedMotoServer

    django.setup()
    setup_test_environment()
    runner = DiscoverRunner(verbosity=0)
    old = runner.setup_databases()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        loop = local_loop(f"http://{host}:{port}")
        costs = sweep_costs()
    finally:
        server.stop()
        runner.teardown_databases(old)
    print(
        "Cloud launcher on the local loop (moto + instance emulator, CPU trainer, sync every 1 s)"
    )
    print(f"  task launch call (spot worker row, RunInstances x1): {loop['launch_call_s']:6.2f} s")
    print(
        f"  launch -> job running on the worker:                         {loop['to_running_s']:6.2f} s"
    )
    print(
        f"  spot notice -> job running again from the S3 checkpoint:     {loop['notice_to_resumed_s']:6.2f} s"
    )
    print(
        f"  outcome: {loop['final_state']}, epoch {loop['epochs']}/{RUN_EPOCHS}, work lost {loop['work_lost_s']:.1f} s"
    )
    print("  anchors: SkyPilot GPU node 2-3 min, ParallelCluster cold node 294 s, relaunch 2-7 min")
    print()
    print(
        f"Spot vs on-demand, {EPOCHS} epochs at {SEED['epochs_per_min']} epochs/min on one GPU server"
    )
    print(f"  {'instance':34} {'hours':>6} {'on-demand':>10} {'spot':>8} {'spot/OD':>8}")
    for name, od, spot, hours in costs:
        print(f"  {name:34} {hours:6.2f} {od:10.2f} {spot:8.2f} {spot / od:8.3f}")
    ok = (
        loop["final_state"] == "succeeded"
        and loop["epochs"] == RUN_EPOCHS
        and loop["notice_to_resumed_s"] == loop["notice_to_resumed_s"]
    )  # not NaN
    if not ok:
        print("FAILED: the job did not resume after the notice and finish every epoch")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
