"""Demo data for the cloud app: the price catalogue from the bundled public prices (cited in
data/prices.json), and the `local-cloud` facility's worker image parameter (the stand-in the
instance emulator publishes in moto, which refuses AWS's own /aws/... names). Idempotent;
called by `seed_demo`."""

from __future__ import annotations

from allocations.models import Facility

from .emulator import LOCAL_IMAGE_PARAMETER
from .services.prices import price_catalogue_load


def seed_cloud() -> int:
    """Load the bundled price catalogue. Returns the entries written."""
    return price_catalogue_load()


def seed_local_image() -> bool:
    """Point the `local-cloud` facility's workers at the emulator's image parameter, unless a
    setting is there already. Returns True when it changed something."""
    facility = Facility.objects.filter(slug="local-cloud", backend="aws").first()
    if facility is None:
        return False
    settings_ = dict(facility.backend_settings or {})
    if settings_.get("image_ssm_parameter") or settings_.get("image_id"):
        return False
    settings_["image_ssm_parameter"] = LOCAL_IMAGE_PARAMETER
    Facility.objects.filter(pk=facility.pk).update(backend_settings=settings_)
    return True


def seed() -> None:
    """seed_demo's entry point: the price catalogue and the local cloud's image parameter."""
    seed_cloud()
    seed_local_image()
