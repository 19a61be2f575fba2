"""Which AwsBackend serves a cluster or facility (endpoint from settings.AWS_ENDPOINT_URL)."""
from __future__ import annotations

import functools

from django.conf import settings

from allocations.models import Facility
from launcher.backends import aws
from launcher.backends.aws import AwsBackend

from .models import Cluster


def facility_region(facility: Facility) -> str:
    return (facility.backend_settings or {}).get("region", "us-east-1")


def facility_bucket(facility: Facility) -> str:
    return (facility.backend_settings or {}).get("bucket") or f"portal-{facility.slug}"


def facility_zones(facility: Facility) -> list[str | None]:
    """Zones to try in order; by default the region's a and b zones."""
    region = facility_region(facility)
    return list((facility.backend_settings or {}).get("zones") or [f"{region}a", f"{region}b"])


@functools.lru_cache(maxsize=32)
def _backend(region: str, bucket: str, endpoint: str | None, image_id: str | None,
             hooks: tuple[int, ...]) -> AwsBackend:
    # boto3 clients are thread-safe and slow to build (~50 ms): one per place and hook set.
    return AwsBackend(region=region, bucket=bucket, endpoint_url=endpoint, image_id=image_id)


def _get(region: str, bucket: str, facility: Facility) -> AwsBackend:
    return _backend(region, bucket, settings.AWS_ENDPOINT_URL or None,
                    (facility.backend_settings or {}).get("image_id"),
                    tuple(id(h) for h in aws.CLIENT_HOOKS))


def backend_for_facility(facility: Facility) -> AwsBackend:
    return _get(facility_region(facility), facility_bucket(facility), facility)


def backend_for(cluster: Cluster) -> AwsBackend:
    return _get(cluster.region, cluster.bucket, cluster.facility)
