"""Exact figures: the API gives charged GPU-seconds as an integer and hours unrounded; the page
rounds for display only, never to zero when something was used, with the exact value kept."""

from __future__ import annotations

from decimal import Decimal

import pytest

from portal.templatetags.portal_tags import amount, percent, rounded
from tests.factories import AllocationFactory, charge

pytestmark = pytest.mark.django_db


@pytest.fixture
def nine_seconds(project, facility):
    """An allocation charged for one 9-second, 1-GPU job (0.0025 GPU-hours, 0.0025 spent)."""
    allocation = AllocationFactory(
        project=project, facility=facility, gpu_hours=Decimal("10"), budget=Decimal("20.00")
    )
    charge(
        allocation=allocation,
        source="slurm",
        external_id="s:41",
        period_start="2026-11-23T10:00:00Z",
        period_end="2026-11-23T10:00:09Z",
        gpu_seconds=9,
        cost=Decimal("0.0025"),
    )
    return allocation


def test_the_api_gives_exact_seconds_and_unrounded_hours(api, researcher, nine_seconds):
    body = api.as_user(researcher).get(f"/api/v1/allocations/{nine_seconds.pk}/").json()
    assert body["gpu_seconds_used"] == 9 and isinstance(body["gpu_seconds_used"], int)
    assert body["gpu_hours_used"] == 0.0025
    assert body["gpu_hours_remaining"] == 10 - 0.0025 and body["gpu_hours_reserved"] == 0
    # Money is a decimal string, exact: never the float 19.9975000000001.
    assert body["spend"] == "0.0025" and body["budget_remaining"] == "19.9975"
    assert body["cost_reserved"] == "0.0000" and body["budget"] == "20.00"


def test_the_page_never_rounds_a_use_to_zero(client, researcher, nine_seconds):
    client.force_login(researcher)
    html = client.get(f"/allocations/{nine_seconds.pk}/").content.decode()
    assert (
        '<dd id="used"><span class="amount" title="0.0025 (exact)">0.0025</span> GPU-hours' in html
    )
    assert "9 GPU-seconds charged, &lt; 0.1%" in html
    assert 'title="9.9975 (exact)">10.00</span> GPU-hours' in html  # remaining, rounded


@pytest.mark.parametrize(
    "value, text",
    [
        (0, "0.00"),
        (Decimal("0.0025"), "0.0025"),
        (1 / 3600, "0.00028"),
        (0.006, "0.01"),
        (Decimal("1234.5678"), "1,234.57"),
        (Decimal("-0.001"), "-0.001"),
    ],
)
def test_display_rounding_keeps_two_decimals_or_two_significant_digits(value, text):
    assert rounded(value) == text
    assert f">{text}</span>" in amount(value)


def test_a_percentage_of_a_tiny_use_is_not_zero():
    assert (percent(Decimal("0.0025"), 10), percent(5, 10), percent(0, 10)) == (
        "< 0.1",
        "50.0",
        "0",
    )


def test_money_is_a_decimal_string_in_the_openapi_document(api, researcher):
    """Money fields (the ledger's, the job's estimate, the cloud's prices) are documented as
    strings of format decimal, as they are served; GPU-hours stay numbers."""
    schemas = (
        api.as_user(researcher).get("/api/v1/schema/?format=json").json()["components"]["schemas"]
    )
    money = {
        "Allocation": ["budget", "spend", "cost_reserved", "budget_remaining"],
        "JobOut": ["estimate_cost"],
        "JobEstimateOut": ["cost"],
        "SweepEstimateOut": ["total_cost"],
    }
    for name, fields in money.items():
        for field in fields:
            prop = schemas[name]["properties"][field]
            assert (prop["type"], prop.get("format")) == ("string", "decimal"), (name, field, prop)
    assert schemas["Allocation"]["properties"]["gpu_hours_used"]["type"] == "number"
    node = next(
        s
        for n, s in schemas.items()
        if n.startswith("Node") and "price_per_hour" in s.get("properties", {})
    )
    assert node["properties"]["price_per_hour"]["format"] == "decimal"
