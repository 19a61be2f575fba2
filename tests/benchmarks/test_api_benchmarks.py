"""GET/POST /api/v1/benchmarks/: filters, bounded queries, who may record results, 400s."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.db import connection
from django.test.utils import CaptureQueriesContext

from allocations.demo import seed_catalogue
from benchmarks.demo import seed
from benchmarks.models import BENCHMARKERS_GROUP, BenchmarkResult
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db
URL = "/api/v1/benchmarks/"


@pytest.fixture
def seeded():
    seed_catalogue()
    seed()


@pytest.fixture
def benchmarker(db):
    user = UserFactory(username="bea")
    user.groups.add(Group.objects.get_or_create(name=BENCHMARKERS_GROUP)[0])
    return user


def harness_json(**overrides):
    """What `python -m benchmarks.harness run` prints (an A100 DenseNet-121 run)."""
    body = dict(
        node_type="B-A100-40",
        workload="densenet121",
        dims=2,
        image_size=224,
        precision="bf16",
        strategy="single",
        gpus=1,
        batch_size=64,
        throughput=812.5,
        throughput_min=790.1,
        throughput_max=820.0,
        repeats=5,
        peak_memory_gb=9.8,
        source="measured",
        software={"torch": "2.13.0", "cuda": "12.4"},
        measured_at="2026-11-23T10:00:00+00:00",
        notes="first GPU run",
    )
    body.update(overrides)
    return body


def test_a_benchmarker_records_a_harness_result(seeded, api, benchmarker):
    answer = api.as_user(benchmarker).post(URL, harness_json(), format="json")
    assert answer.status_code == 201, answer.data
    data = answer.json()
    assert (data["node_type"], data["facility"], data["workload"]) == (
        "B-A100-40",
        "baskerville",
        "densenet121-2d",
    )
    assert data["submitted_by"] == "bea" and data["software"]["cuda"] == "12.4"
    stored = BenchmarkResult.objects.get(pk=data["id"])
    assert stored.throughput == 812.5 and stored.submitted_by == benchmarker


def test_staff_may_record_too(seeded, api, admin):
    assert api.as_user(admin).post(URL, harness_json(), format="json").status_code == 201


def test_a_plain_researcher_may_read_but_not_record(seeded, api, researcher):
    client = api.as_user(researcher)
    assert client.get(URL).status_code == 200
    answer = client.post(URL, harness_json(), format="json")
    assert answer.status_code == 403 and "benchmarkers" in answer.json()["detail"]
    assert not BenchmarkResult.objects.filter(submitted_by=researcher).exists()


def test_anonymous_callers_are_refused(seeded, api):
    assert api.get(URL).status_code == 401
    assert api.post(URL, harness_json(), format="json").status_code == 401


@pytest.mark.parametrize(
    "overrides, field, says",
    [
        (dict(node_type="X-TPU-9"), "node_type", "known: B-A100-40"),
        (dict(workload="alexnet"), "workload", "known models: densenet121"),
        (dict(workload="gpt2", dims=2), "dims", "gpt2 is known with dims 1"),
        (dict(throughput=-3), "throughput", "greater than or equal to 0"),
        (dict(throughput=0), "throughput", "greater than 0"),
        (dict(throughput_min=900), "throughput_min", "Must not exceed throughput"),
        (dict(precision="fp8"), "precision", "allowed: fp32, tf32, fp16, bf16"),
        (dict(strategy="single", gpus=4), "strategy", "single means one GPU"),
        (dict(source="published", citation=""), "citation", "needs a citation"),
        (dict(node_type="g5.xlarge"), "facility", "aws-spot, local-cloud"),
        (dict(gpus="two"), "gpus", "valid integer"),
    ],
)
def test_bad_results_are_400s_per_field(seeded, api, benchmarker, overrides, field, says):
    answer = api.as_user(benchmarker).post(URL, harness_json(**overrides), format="json")
    assert answer.status_code == 400, answer.data
    assert says in " ".join(answer.json()[field])


def test_a_facility_settles_a_shared_node_type_name(seeded, api, benchmarker):
    answer = api.as_user(benchmarker).post(
        URL,
        harness_json(node_type="g5.xlarge", facility="local-cloud", precision="fp16"),
        format="json",
    )
    assert answer.status_code == 201 and answer.json()["facility"] == "local-cloud"


@pytest.mark.parametrize(
    "query, expected",
    [
        ("node_type=J-V100-32", 3),
        ("facility=aws-spot", 3),
        ("model=resnet50&source=published", 13),  # with the two H200 references
        ("workload=densenet121-2d", 4),
        ("precision=bf16", 1),
        ("source=measured&gpus=1", 16),
        ("strategy=ddp", 0),
    ],
)
def test_the_list_filters(seeded, api, researcher, query, expected):
    answer = api.as_user(researcher).get(f"{URL}?{query}").json()
    assert answer["count"] == expected, query


def test_listing_runs_a_bounded_number_of_queries(seeded, api, benchmarker):
    client = api.as_user(benchmarker)

    def queries():
        with CaptureQueriesContext(connection) as ctx:
            assert client.get(URL).status_code == 200
        return len(ctx.captured_queries)

    few = queries()
    for i in range(30):
        client.post(URL, harness_json(batch_size=i + 1, node_type="B-A100-80"), format="json")
    assert queries() == few
