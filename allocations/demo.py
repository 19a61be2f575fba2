"""Demo catalogue: the facilities and node types of the seeds (the Turing's HPC systems table
and peak TFLOP/s table), a cloud subscription, an AWS spot cluster, and three local facilities
for trying the portal end to end. Loaded by `manage.py seed_demo`; idempotent."""

from __future__ import annotations

import datetime as dt
import os
from decimal import Decimal
from pathlib import Path
from typing import Any

from .models import Facility, NodeType

ALL_TIERS = ["public", "internal", "personal", "special"]
SERVICES_ENV = Path(os.environ.get("PORTAL_SERVICES_ENV", "/var/lib/portal-services/services.env"))

# (slug, name, kind, backend, policy and offers)
FACILITIES = [
    dict(
        slug="baskerville",
        name="Baskerville",
        kind="hpc",
        backend="slurm",
        description="National accelerated compute (Tier 2): NVIDIA A100 nodes, SXM4, for GPU "
        "training at scale. Jupyter via the portal; no root.",
        documentation_url="https://docs.baskerville.ac.uk/",
        full_gpu_hours_max=100000,
        trial_auto_approve=True,
        latest_end_date=dt.date(2027, 3, 31),
        allowed_sensitivity=["public", "internal"],
        gpu_hour_rate=Decimal("1.20"),
        offers_notebooks=True,
    ),
    dict(
        slug="jade2",
        name="JADE2",
        kind="hpc",
        backend="slurm",
        description="Joint Academic Data science Endeavour: NVIDIA V100 32 GB nodes (8 per node).",
        documentation_url="https://docs.jade.ac.uk/",
        full_gpu_hours_max=50000,
        trial_auto_approve=True,
        latest_end_date=dt.date(2027, 3, 31),
        allowed_sensitivity=["public", "internal"],
        gpu_hour_rate=Decimal("0.60"),
    ),
    dict(
        slug="stanage",
        name="Stanage",
        kind="hpc",
        backend="slurm",
        description="University of Sheffield HPC with NVIDIA H100 80 GB PCIe nodes.",
        documentation_url="https://docs.hpc.shef.ac.uk/",
        full_gpu_hours_max=20000,
        trial_auto_approve=False,
        latest_end_date=dt.date(2027, 7, 31),
        allowed_sensitivity=["public", "internal", "personal"],
        gpu_hour_rate=Decimal("1.80"),
    ),
    dict(
        slug="dawn",
        name="Dawn",
        kind="hpc",
        backend="slurm",
        description="Cambridge AI supercomputer: Intel Data Center GPU Max 1550 (128 GB).",
        documentation_url="https://docs.hpc.cam.ac.uk/",
        full_gpu_hours_max=100000,
        trial_auto_approve=True,
        latest_end_date=dt.date(2027, 3, 31),
        allowed_sensitivity=["public", "internal"],
        gpu_hour_rate=Decimal("1.00"),
    ),
    dict(
        slug="cosma8",
        name="COSMA8",
        kind="hpc",
        backend="slurm",
        description="DiRAC Durham: AMD MI100 and MI210 GPUs, suited to traditional HPC codes.",
        documentation_url="https://cosma.readthedocs.io/",
        full_gpu_hours_max=50000,
        trial_auto_approve=False,
        latest_end_date=dt.date(2027, 3, 31),
        allowed_sensitivity=["public", "internal"],
        gpu_hour_rate=Decimal("0.80"),
    ),
    dict(
        slug="azure",
        name="Azure subscription",
        kind="cloud",
        backend="manual",
        description="Cloud subscription for full control: root access, public web services, "
        "long-term storage, and a Trusted Research Environment for special data.",
        documentation_url="https://learn.microsoft.com/azure/",
        trial_gpu_hours_cap=400,
        full_gpu_hours_max=10000,
        trial_auto_approve=True,
        latest_end_date=dt.date(2027, 3, 31),
        allowed_sensitivity=ALL_TIERS,
        offers_notebooks=True,
        offers_root=True,
        offers_public_web=True,
    ),
    dict(
        slug="aws-spot",
        name="AWS spot GPU cluster",
        kind="cloud",
        backend="aws",
        description="Spot GPU workers that start with each job and stop when idle; about a "
        "third of the on-demand price, and jobs resume after interruptions.",
        documentation_url="https://docs.aws.amazon.com/ec2/",
        full_gpu_hours_max=5000,
        trial_auto_approve=True,
        latest_end_date=dt.date(2027, 12, 31),
        allowed_sensitivity=["public", "internal", "personal"],
        offers_notebooks=True,
        offers_root=True,
        offers_public_web=True,
        backend_settings={"region": "eu-west-2"},
    ),
    dict(
        slug="local",
        name="Local workstation",
        kind="local",
        backend="local",
        description="Runs jobs as local processes on the portal host. For demos and tests.",
        full_gpu_hours_max=1000,
        trial_auto_approve=True,
        allowed_sensitivity=ALL_TIERS,
        offers_notebooks=True,
        offers_root=True,
    ),
    dict(
        slug="local-slurm",
        name="Local Slurm cluster",
        kind="hpc",
        backend="slurm",
        description="The single-node Slurm cluster `make services` starts (two GPUs), reached "
        "over SSH on 127.0.0.1:2222.",
        full_gpu_hours_max=2000,
        trial_auto_approve=True,
        allowed_sensitivity=ALL_TIERS,
        gpu_hour_rate=Decimal("0.50"),
    ),
    dict(
        slug="local-cloud",
        name="Local cloud (moto)",
        kind="cloud",
        backend="aws",
        description="An AWS-shaped cloud served by a local moto server; worker instances are "
        "played by local processes.",
        full_gpu_hours_max=1000,
        trial_auto_approve=True,
        allowed_sensitivity=ALL_TIERS,
        offers_root=True,
        backend_settings={
            "region": "us-east-1",
            "bucket": "portal-local-cloud",
            "storage_root": "projects",
        },
    ),
]

# Dense TF32 tensor/matrix peaks from the datasheets (not in the seed's table); sources in
# benchmarks/catalogue_hardware.py.
TF32_PEAKS = {
    "NVIDIA A100 SXM4": 156.0,
    "NVIDIA A100": 156.0,
    "NVIDIA H100 PCIe": 378.0,
    "NVIDIA H100 SXM5": 495.0,
    "NVIDIA A10G": 62.5,
    "Intel Max 1550": 416.0,
}

# AWS single- and quad-GPU types (us-east-1 list on-demand and typical spot prices as recorded
# in benchmarks/catalogue_hardware.py, 2024-05); the launcher's price catalogue refines them per region.
_G5 = [
    dict(
        name="g5.xlarge",
        accelerator="NVIDIA A10G",
        accelerator_memory_gb=24,
        accelerators_per_node=1,
        peak=(125, 125, 31.2, 0.98),
        instance_type="g5.xlarge",
        price_on_demand=Decimal("1.006"),
        price_spot=Decimal("0.45"),
        cpu_cores=4,
        memory_gb=16,
    ),
    dict(
        name="g5.12xlarge",
        accelerator="NVIDIA A10G",
        accelerator_memory_gb=24,
        accelerators_per_node=4,
        peak=(125, 125, 31.2, 0.98),
        instance_type="g5.12xlarge",
        price_on_demand=Decimal("5.672"),
        price_spot=Decimal("2.30"),
        cpu_cores=48,
        memory_gb=192,
    ),
]

# Peak TFLOP/s (fp16, bf16, fp32, fp64): the seed's "HPC Peak Performance on Paper" table, with
# three of its figures replaced by the datasheets' dense tensor/matrix peaks (sources in
# benchmarks/catalogue_hardware.py): V100 fp16 125 (the seed's 31.33 is the non-tensor rate), H100 PCIe
# 756 (the seed's 1,513 is the with-sparsity figure), Max 1550 fp16 832 (the seed's 52.43 is the
# vector rate). Never enter a with-sparsity figure: the recommender treats peaks as dense.
NODE_TYPES: dict[str, list[dict[str, Any]]] = {
    "jade2": [
        dict(
            name="J-V100-32",
            accelerator="NVIDIA V100 SXM2",
            accelerator_memory_gb=32,
            accelerators_per_node=8,
            interconnect="SXM2",
            peak=(125, None, 15.7, 7.8),
            launch_date=dt.date(2017, 6, 1),
            cpu_cores=40,
            memory_gb=512,
        )
    ],
    "baskerville": [
        dict(
            name="B-A100-40",
            accelerator="NVIDIA A100 SXM4",
            accelerator_memory_gb=40,
            accelerators_per_node=4,
            interconnect="SXM4",
            peak=(312, 312, 19.5, 9.7),
            launch_date=dt.date(2020, 6, 1),
            cpu_cores=72,
            memory_gb=512,
        ),
        dict(
            name="B-A100-80",
            accelerator="NVIDIA A100 SXM4",
            accelerator_memory_gb=80,
            accelerators_per_node=4,
            interconnect="SXM4",
            peak=(312, 312, 19.5, 9.7),
            launch_date=dt.date(2020, 6, 1),
            cpu_cores=72,
            memory_gb=512,
        ),
    ],
    "stanage": [
        dict(
            name="S-H100-80",
            accelerator="NVIDIA H100 PCIe",
            accelerator_memory_gb=80,
            accelerators_per_node=4,
            interconnect="PCIe 4.0",
            peak=(756, 756, 51, 26),
            launch_date=dt.date(2023, 3, 1),
            cpu_cores=48,
            memory_gb=512,
        )
    ],
    "cosma8": [
        dict(
            name="C-MI100-32",
            accelerator="AMD MI100",
            accelerator_memory_gb=32,
            accelerators_per_node=4,
            interconnect="PCIe 4.0",
            peak=(184.6, 92.3, 23.1, 11.5),
            launch_date=dt.date(2020, 11, 1),
            cpu_cores=64,
            memory_gb=512,
        ),
        dict(
            name="C-MI210-64",
            accelerator="AMD MI210",
            accelerator_memory_gb=64,
            accelerators_per_node=4,
            interconnect="PCIe 4.0",
            peak=(181, 181, 22.6, 22.6),
            launch_date=dt.date(2022, 3, 1),
            cpu_cores=64,
            memory_gb=512,
        ),
    ],
    "dawn": [
        dict(
            name="D-MX1550-128",
            accelerator="Intel Max 1550",
            accelerator_memory_gb=128,
            accelerators_per_node=4,
            interconnect="PCIe 5.0",
            peak=(832, 832, 52.43, 52.43),
            launch_date=dt.date(2023, 3, 1),
            cpu_cores=96,
            memory_gb=1024,
        )
    ],
    "azure": [
        dict(
            name="NC24ads-A100",
            accelerator="NVIDIA A100",
            accelerator_memory_gb=80,
            accelerators_per_node=1,
            peak=(312, 312, 19.5, 9.7),
            instance_type="Standard_NC24ads_A100_v4",
            price_on_demand=Decimal("3.673"),
            price_spot=Decimal("1.469"),
            cpu_cores=24,
            memory_gb=220,
        )
    ],
    "aws-spot": [
        *_G5,
        dict(
            name="p4d.24xlarge",
            accelerator="NVIDIA A100 SXM4",
            accelerator_memory_gb=40,
            accelerators_per_node=8,
            peak=(312, 312, 19.5, 9.7),
            instance_type="p4d.24xlarge",
            price_on_demand=Decimal("32.7726"),
            price_spot=Decimal("12.00"),
            cpu_cores=96,
            memory_gb=1152,
        ),
        dict(
            name="p5.48xlarge",
            accelerator="NVIDIA H100 SXM5",
            accelerator_memory_gb=80,
            accelerators_per_node=8,
            peak=(989, 989, 67, 34),
            instance_type="p5.48xlarge",
            price_on_demand=Decimal("98.320"),
            price_spot=Decimal("40.00"),
            cpu_cores=192,
            memory_gb=2048,
        ),
    ],
    "local": [
        dict(
            name="local-cpu",
            accelerator="CPU",
            accelerator_memory_gb=24,
            peak=(None, 0.38, 0.19, 0.095),
            accelerators_per_node=1,
            cpu_cores=2,
            memory_gb=24,
            device="cpu",
            max_accelerators=1,
        )
    ],
    "local-slurm": [
        dict(
            name="local-gpu",
            accelerator="Fake GPU (Slurm gres)",
            accelerator_memory_gb=16,
            accelerators_per_node=2,
            cpu_cores=2,
            memory_gb=24,
        )
    ],
    # The local cloud offers the same single- and quad-GPU types, played by local processes.
    "local-cloud": _G5,
}


def read_services_env(path: Path = SERVICES_ENV) -> dict[str, str]:
    """The connection facts `make services` wrote (SSH port, keys), if it has run."""
    facts: dict[str, str] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            key, sep, value = line.partition("=")
            if sep and not key.startswith("#"):
                facts[key.strip()] = value.strip().strip('"').strip("'")
    return facts


def seed_catalogue() -> list[Facility]:
    """Create or update the demo facilities and node types; running it twice changes nothing."""
    facilities = []
    for spec in FACILITIES:
        spec = dict(spec)
        # local-slurm's SSH settings come from `make services` (launcher/demo.py fills them).
        facility, _ = Facility.objects.update_or_create(slug=spec.pop("slug"), defaults=spec)
        for node in NODE_TYPES.get(facility.slug, []):
            node = dict(node)
            fp16, bf16, fp32, fp64 = node.pop("peak", (None, None, None, None))
            node.update(
                peak_tflops_fp16=fp16,
                peak_tflops_bf16=bf16,
                peak_tflops_fp32=fp32,
                peak_tflops_fp64=fp64,
                peak_tflops_tf32=TF32_PEAKS.get(node.get("accelerator", "")),
            )
            NodeType.objects.update_or_create(
                facility=facility, name=node.pop("name"), defaults=node
            )
        facilities.append(facility)
    return facilities
