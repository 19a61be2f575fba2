"""One type and one rounding rule per kind of figure, in every answer of the API (issue 39;
docs/api.md, "Figures"; core/figure_fields.py): hours are JSON numbers, never rounded (the
ledger's own figure); money is a decimal string (exact, never a float). Read from the OpenAPI
document, so a new field that breaks the rule fails here before a client sees it, and from
live answers, so the document cannot say one thing while the API writes another."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest

from tests.factories import AllocationFactory, charge

pytestmark = [pytest.mark.django_db]

# Money by name: cost, budget, spend, price (alone or as a word of the name), a USD amount, and the
# facility's charge per GPU-hour.
MONEY_NAME = re.compile(r"(^|_)(cost|budget|spend|price)(_|$)|(^|_)usd(_|$)|^gpu_hour_rate$")
# Named like a figure but a date: the day the GPU-hours (or the budget) run out at the 7-day rate.
DATES = {("RunsOut", "gpu_hours"), ("RunsOut", "budget")}
# Named like a figure but a word: what a facility's hours count ("GPU-hours" or "CPU-hours").
WORDS = {("Unit", "hours")}


@pytest.fixture
def schema(api, researcher):
    response = api.as_user(researcher).get("/api/v1/schema/?format=json")
    assert response.status_code == 200
    return response.json()


def refs(node):
    """Every component name a schema fragment points at, however deep."""
    if isinstance(node, dict):
        if "$ref" in node:
            yield node["$ref"].rsplit("/", 1)[-1]
        for value in node.values():
            yield from refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from refs(value)


def answer_components(schema) -> set[str]:
    """The components an answer (a response body) is made of, followed through every $ref."""
    components = schema["components"]["schemas"]
    todo = [
        name
        for item in schema["paths"].values()
        for operation in item.values()
        for response in operation.get("responses", {}).values()
        for name in refs(response.get("content", {}))
    ]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(refs(components[name]))
    return seen


def fields(component: dict, prefix: str = ""):
    """(dotted name, property schema) of a component's properties, inline objects' included."""
    for name, spec in component.get("properties", {}).items():
        yield prefix + name, spec
        if spec.get("type") == "object":
            yield from fields(spec, f"{prefix}{name}.")
        if spec.get("type") == "array" and isinstance(spec.get("items"), dict):
            yield from fields(spec["items"], f"{prefix}{name}[].")


def test_every_hours_figure_is_a_number_and_every_money_figure_a_decimal_string(schema):
    components = schema["components"]["schemas"]
    answers = answer_components(schema)
    hours_seen, money_seen, inputs_seen = set(), set(), set()
    for component, body in components.items():
        for name, spec in fields(body):
            leaf = name.rsplit(".", 1)[-1].removesuffix("[]")
            where = (component, name)
            if where in DATES:
                assert spec.get("format") == "date", where  # a day, not a figure
                continue
            if where in WORDS:
                assert spec.get("type") == "string" and "format" not in spec, where
                continue
            if component not in answers:  # only sent: hours may be whole (integer) numbers
                if "hours" in leaf:
                    assert spec.get("type") in ("number", "integer"), (where, spec)
                    inputs_seen.add(where)
                continue
            if "hours" in leaf:
                assert spec.get("type") == "number", (where, spec)
                hours_seen.add(where)
            elif MONEY_NAME.search(leaf):
                assert (spec.get("type"), spec.get("format")) == ("string", "decimal"), where
                money_seen.add(where)
            elif spec.get("format") == "decimal":  # a decimal string is money, nothing else
                pytest.fail(f"{where} is a decimal string but not money: make it a number")
    # The walk reached the figures the issue named, in every part of the API.
    assert {
        ("Allocation", "gpu_hours"),
        ("Allocation", "gpu_hours_used"),
        ("Allocation", "gpu_hours_remaining"),
        ("Allocation", "cpu_hours"),
        ("RequestOutput", "gpu_hours"),
        ("RequestOutput", "granted_gpu_hours"),
        ("JobOut", "estimate_gpu_hours"),
        ("JobOut", "predicted_hours"),
        ("JobEstimateOut", "remaining_gpu_hours"),
        ("SweepOut", "estimate_gpu_hours"),
        ("SweepEstimateOut", "total_gpu_hours"),
        ("PlacementOptionOut", "left_gpu_hours"),
        ("BurnRate", "gpu_hours_per_day_7d"),
        ("UsageDay", "gpu_hours"),
        ("ReportRow", "gpu_hours"),
        ("RecommendationResult", "predicted_hours"),
        ("RecommendationResult", "request_gpu_hours"),
        ("Facility", "trial_gpu_hours_cap"),
        ("NotebookOut", "hours"),
    } <= hours_seen
    assert {
        ("Allocation", "budget"),
        ("Allocation", "spend"),
        ("Allocation", "budget_remaining"),
        ("RequestOutput", "cloud_budget"),
        ("JobOut", "estimate_cost"),
        ("SweepEstimateOut", "total_cost"),
        ("PlacementOptionOut", "left_budget"),
        ("BurnRate", "cost_per_day_7d"),
        ("UsageDay", "cost"),
        ("ReportRow", "cost"),
        ("RecommendationResult", "cost"),
        ("NodeType", "price_spot"),
        ("Facility", "gpu_hour_rate"),
    } <= money_seen
    assert ("RequestInputRequest", "gpu_hours") in inputs_seen


def test_a_placed_jobs_kept_placement_is_documented_as_placements_answer(schema):
    placement = schema["components"]["schemas"]["JobOut"]["properties"]["placement"]
    assert placement["allOf"] == [{"$ref": "#/components/schemas/PlacementOut"}]
    assert placement["nullable"] is True


def test_an_allocations_granted_and_used_hours_are_the_same_json_type(api, researcher, project):
    allocation = AllocationFactory(project=project, gpu_hours=Decimal("400"), budget=Decimal(50))
    charge(allocation=allocation, source="local", external_id="j1", gpu_seconds=2829, cost="1.25")
    one = api.as_user(researcher).get(f"/api/v1/allocations/{allocation.pk}/").json()
    (listed,) = api.get("/api/v1/allocations/").json()["results"]
    for body in (one, listed):
        assert type(body["gpu_hours"]) is type(body["gpu_hours_used"]) is float
        assert type(body["gpu_hours_remaining"]) is type(body["cpu_hours"]) is float
        assert body["gpu_hours"] == 400.0
        # The ledger's figure, unrounded: 2829 GPU-seconds, not 0.79 or 0.786.
        assert body["gpu_hours_used"] == 2829 / 3600 and body["gpu_seconds_used"] == 2829
        assert body["gpu_hours_remaining"] == float(Decimal(400) - Decimal(2829) / 3600)
        # Money: decimal strings at the places the ledger keeps them.
        assert (body["budget"], body["spend"], body["budget_remaining"]) == (
            "50.00",
            "1.2500",
            "48.7500",
        )


def test_the_daily_usage_series_is_unrounded_hours_and_money_strings(api, researcher, project):
    allocation = AllocationFactory(project=project)
    charge(allocation=allocation, source="local", external_id="j1", gpu_seconds=1, cost="0.0003")
    body = api.as_user(researcher).get(f"/api/v1/allocations/{allocation.pk}/usage/").json()
    (day,) = body["daily"]
    assert body["allocation"] == allocation.pk
    # One GPU-second is 0.000277... GPU-hours: the old 3-place rounding wrote 0.0.
    assert day["gpu_hours"] == 1 / 3600 and day["cost"] == "0.0003"
