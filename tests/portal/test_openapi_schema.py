"""The OpenAPI document's promises, read directly (fast; the schemathesis run checks them against
the live API): every operation lists its error statuses with the shared shapes, bodies are JSON
only, nullable output fields say so, and constraints are in the schema."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.django_db]

WRITES = {"post", "put", "patch", "delete"}
PUBLIC = {("post", "/api/v1/auth/token/"), ("get", "/api/v1/onboarding/flow/")}


@pytest.fixture
def schema(api, researcher):
    response = api.as_user(researcher).get("/api/v1/schema/?format=json")
    assert response.status_code == 200
    return response.json()


def operations(schema):
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            yield method, path, operation


def ref(operation, code):
    return operation["responses"][code]["content"]["application/json"]["schema"]["$ref"]


def test_every_operation_documents_its_errors_with_the_shared_shapes(schema):
    seen = 0
    for method, path, operation in operations(schema):
        seen += 1
        codes = set(operation["responses"])
        assert ref(operation, "400") == "#/components/schemas/FieldErrors", (method, path)
        if (method, path) not in PUBLIC:
            assert {"401", "403"} <= codes, (method, path)
            assert ref(operation, "403") == "#/components/schemas/Error"
        if "{" in path:
            assert ref(operation, "404") == "#/components/schemas/Error", (method, path)
        if "requestBody" in operation:
            assert "415" in codes, (method, path)
    assert seen >= 30
    components = schema["components"]["schemas"]
    assert components["Error"]["required"] == ["detail"]
    assert {"from", "to"} <= set(components["Conflict"]["properties"])


@pytest.mark.parametrize(
    "method,path",
    [
        ("post", "/api/v1/requests/{id}/submit/"),
        ("post", "/api/v1/requests/{id}/approve/"),
        ("patch", "/api/v1/requests/{id}/"),
        ("post", "/api/v1/jobs/"),
        ("post", "/api/v1/jobs/{id}/cancel/"),
        ("post", "/api/v1/sweeps/{id}/cancel/"),
    ],
)
def test_state_moves_and_launches_document_the_409(schema, method, path):
    assert ref(schema["paths"][path][method], "409") == "#/components/schemas/Conflict"


def test_request_bodies_are_json_only(schema):
    for method, path, operation in operations(schema):
        if "requestBody" in operation:
            assert set(operation["requestBody"]["content"]) == {"application/json"}, (method, path)
    patch = schema["paths"]["/api/v1/requests/{id}/"]["patch"]
    assert patch["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "PatchedRequestInputRequest"
    )


def test_fields_that_can_be_null_say_so(schema):
    components = schema["components"]["schemas"]
    assert components["RequestOutput"]["properties"]["reviewed_by"]["nullable"] is True
    assert components["RequestOutput"]["properties"]["node_type"]["nullable"] is True
    assert components["Allocation"]["properties"]["node_type"]["nullable"] is True
    assert components["BenchmarkResult"]["properties"]["submitted_by"]["nullable"] is True
    assert "nullable" not in components["RequestOutput"]["properties"]["project_code"]


def test_constraints_match_validation(schema):
    components = schema["components"]["schemas"]
    launch = components["LaunchInputRequest"]["properties"]
    assert launch["gpus"]["minimum"] == 1 and launch["gpus"]["maximum"] == 64
    assert set(launch["grid"]) & {"type", "oneOf", "anyOf", "allOf", "$ref"}  # not free-form
    recommendation = components["RecommendationRequestRequest"]["properties"]
    assert recommendation["gpus"]["minimum"] == 1 and recommendation["epochs"]["minimum"] == 0.01
    assert components["ProjectRequest"]["properties"]["code"]["pattern"].startswith("^[A-Z0-9]")
    page = next(
        p for p in schema["paths"]["/api/v1/jobs/"]["get"]["parameters"] if p["name"] == "page"
    )
    assert page["schema"]["minimum"] == 1
    gpus = next(
        p
        for p in schema["paths"]["/api/v1/benchmarks/"]["get"]["parameters"]
        if p["name"] == "gpus"
    )
    assert gpus["schema"]["minimum"] == 1
    facility = next(
        p
        for p in schema["paths"]["/api/v1/allocations/"]["get"]["parameters"]
        if p["name"] == "facility"
    )
    assert facility["schema"]["minLength"] == 1  # `?facility=` is a 400, not "any facility"


def test_a_number_is_not_a_string(api, pi, project):
    """Found by the fuzzer: DRF turned `"pi_name": 0` into "0" where the schema says string."""
    response = api.as_user(pi).patch(
        f"/api/v1/projects/{project.pk}/", {"pi_name": 0}, format="json"
    )
    assert response.status_code == 400 and "pi_name" in response.json()
    project.refresh_from_db()
    assert project.pi_name != "0"
