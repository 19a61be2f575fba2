"""Which AwsClient serves a cluster or facility (endpoint from settings.AWS_ENDPOINT_URL)."""

from __future__ import annotations

import functools
import secrets
from collections.abc import Callable
from typing import Any

from django.conf import settings

from allocations.models import Facility
from launcher.cloud import aws
from launcher.cloud.aws import AwsClient

from .models import Cluster, Installation


def facility_region(facility: Facility) -> str:
    return (facility.backend_settings or {}).get("region", "us-east-1")


def facility_bucket(facility: Facility) -> str:
    return (facility.backend_settings or {}).get("bucket") or f"portal-{facility.slug}"


def facility_zones(facility: Facility) -> list[str | None]:
    """Zones to try in order; by default the region's a and b zones."""
    region = facility_region(facility)
    return list((facility.backend_settings or {}).get("zones") or [f"{region}a", f"{region}b"])


# AWS's public SSM parameters for the images (looked up at each launch, so a new release of
# the AMI is picked up without a portal change). Workers: the Deep Learning OSS Nvidia Driver
# AMI GPU PyTorch 2.13 (Amazon Linux 2023): NVIDIA driver, CUDA, PyTorch at /opt/pytorch (the
# version the workload is tested with). Clusters have workers only (no head node).
# https://docs.aws.amazon.com/dlami/latest/devguide/find-dlami-id.html
WORKER_IMAGE_PARAMETER = (
    "/aws/service/deeplearning/ami/x86_64/"
    "oss-nvidia-driver-gpu-pytorch-2.13-amazon-linux-2023/latest/ami-id"
)


def facility_image(facility: Facility) -> tuple[str, str]:
    """("id", image) when the facility pins a worker image id, else ("ssm", the SSM parameter
    to look up). Settings: `image_id` / `image_ssm_parameter`. The `head_image_*` settings of
    older versions (which launched a head node) are ignored."""
    settings_ = facility.backend_settings or {}
    if settings_.get("image_id"):
        return "id", settings_["image_id"]
    return "ssm", settings_.get("image_ssm_parameter") or WORKER_IMAGE_PARAMETER


@functools.lru_cache(maxsize=32)
def _backend(
    region: str,
    bucket: str,
    endpoint: str | None,
    hooks: tuple[Callable[[Any], None], ...],
    installation: str,
) -> AwsClient:
    # boto3 clients are thread-safe and slow to build (~50 ms): one per place and hook set.
    # The key holds the hooks themselves, not their id()s: a hook that has been removed and
    # freed can leave its address to a new one, which then got the old hook's client (a test
    # injecting spot status codes saw another test's codes).
    return AwsClient(region=region, bucket=bucket, endpoint_url=endpoint, installation=installation)


def installation_id() -> str:
    """This installation's id: `settings.PORTAL_INSTALLATION_ID` when set, else the one stored
    in the database (`Installation`, created once, at the first cloud call, as 16 random hex
    digits). A restored copy of the database is the same installation; a second portal on the
    same AWS account has its own id, set or generated."""
    configured = getattr(settings, "PORTAL_INSTALLATION_ID", "")
    if configured:
        return configured
    row = Installation.objects.order_by("pk").first()
    if row is None:
        row, _ = Installation.objects.get_or_create(pk=1, defaults={"value": secrets.token_hex(8)})
    return row.value


def _get(region: str, bucket: str, facility: Facility) -> AwsClient:
    return _backend(
        region,
        bucket,
        settings.AWS_ENDPOINT_URL or None,
        tuple(aws.CLIENT_HOOKS),
        installation_id(),
    )


def aws_client_for_facility(facility: Facility) -> AwsClient:
    return _get(facility_region(facility), facility_bucket(facility), facility)


def aws_client(cluster: Cluster) -> AwsClient:
    return _get(cluster.region, cluster.bucket, cluster.facility)
