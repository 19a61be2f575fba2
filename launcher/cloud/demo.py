"""Demo data for the cloud app: the price catalogue from the bundled public prices (cited in
data/prices.json). Idempotent; called by `seed_demo` once wired (see docs/cloud.md)."""
from __future__ import annotations

from .services.prices import price_catalogue_load


def seed_cloud() -> int:
    """Load the bundled price catalogue. Returns the entries written."""
    return price_catalogue_load()


def seed() -> None:
    """seed_demo's entry point: the price catalogue."""
    seed_cloud()
