"""The price catalogue: loaded from the bundled public prices, refreshed from the spot price
history where a real endpoint answers with real numbers."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

from django.db import transaction

from allocations.models import Facility

from ..client import aws_client_for_facility, facility_region
from ..models import PriceCatalogueEntry

BUNDLED = Path(__file__).resolve().parent.parent / "data" / "prices.json"
# moto answers every spot price with 0.00001; no real GPU instance costs under a tenth of a cent.
IMPLAUSIBLE_BELOW = Decimal("0.001")


@transaction.atomic
def price_catalogue_load(*, path: Path = BUNDLED) -> int:
    """Create or update the entries of a prices file (format: data/prices.json). Idempotent.
    Returns the entries written."""
    doc = json.loads(Path(path).read_text())
    as_of = dt.date.fromisoformat(doc["as_of"])
    written = 0
    for row in doc["prices"]:
        for market in (PriceCatalogueEntry.Market.ON_DEMAND, PriceCatalogueEntry.Market.SPOT):
            if market not in row:
                continue
            PriceCatalogueEntry.objects.update_or_create(
                region=row["region"],
                instance_type=row["instance_type"],
                market=market,
                defaults=dict(
                    price_per_hour=Decimal(row[market]),
                    gpus=row.get("gpus", 0),
                    currency=doc.get("currency", "USD"),
                    as_of=as_of,
                    source=f"Bundled public price list ({path.name})",
                    source_url=doc["sources"][market],
                ),
            )
            written += 1
    return written


def price_catalogue_refresh_spot(*, facility: Facility) -> dict[str, int]:
    """Update spot prices of the facility's instance types from describe_spot_price_history.
    Dummy answers (moto's 0.00001) are skipped, so the catalogue keeps its last real price.
    Network first, then one short transaction."""
    types = sorted({nt.instance_type for nt in facility.node_types.all() if nt.instance_type})
    prices = aws_client_for_facility(facility).spot_prices(types) if types else {}
    real = {t: Decimal(str(p)) for t, p in prices.items() if Decimal(str(p)) >= IMPLAUSIBLE_BELOW}
    region, today = facility_region(facility), dt.date.today()
    with transaction.atomic():
        for instance_type, price in real.items():
            PriceCatalogueEntry.objects.update_or_create(
                region=region,
                instance_type=instance_type,
                market="spot",
                defaults=dict(
                    price_per_hour=price,
                    as_of=today,
                    source="EC2 spot price history",
                    source_url="https://docs.aws.amazon.com/AWSEC2/latest/APIReference/"
                    "API_DescribeSpotPriceHistory.html",
                ),
            )
    return {"updated": len(real), "skipped_implausible": len(prices) - len(real)}
