"""/recommend/ and /benchmarks/ rendered by Django: table, reasons, links, errors, queries."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from allocations.demo import seed_catalogue
from allocations.models import NodeType
from benchmarks.demo import seed
from benchmarks.models import BenchmarkResult, Workload

pytestmark = pytest.mark.django_db
QUERY = dict(
    model="gpt2-xxl",
    dims=1,
    image_size=128,
    dataset_samples=100000,
    epochs=1,
    precision="fp32",
    gpus=1,
    batch_size=1,
    data_sensitivity="public",
)


@pytest.fixture
def seeded():
    seed_catalogue()
    seed()


def test_recommend_shows_a_ranked_table_with_reasons_and_request_links(seeded, client):
    html = client.get(f"/recommend/?{urlencode(QUERY)}").content.decode()
    assert 'id="ranked"' in html and "Time against cost" not in html.split('id="ranked"')[0]
    assert "39.6 GB of weights, gradients and Adam state" in html  # why the V100 is refused
    assert "does not fit" in html and "usable" in html
    assert "/requests/new/?facility=" in html and "node_type=B-A100-80" in html
    assert 'id="time-cost-data"' in html and 'id="precision-data"' in html
    assert "vendor/plotly/plotly.min.js" in html


def test_the_form_is_prefilled_from_the_onboarding_query(seeded, client):
    html = client.get("/recommend/?data_sensitivity=special&needs=notebooks,root").content.decode()
    assert '<option value="special" selected>' in html
    assert 'value="notebooks" id="id_needs_0" checked' in html.replace("\n", "")
    assert 'value="root" id="id_needs_1" checked' in html
    assert 'id="ranked"' not in html  # nothing is computed until a model is chosen


def test_bad_input_is_shown_on_the_fields_not_a_500(seeded, client):
    response = client.get(f"/recommend/?{urlencode(dict(QUERY, gpus=-1, model='alexnet'))}")
    assert response.status_code == 200
    html = response.content.decode()
    assert "Must be between 1 and 4096" in html and "allowed: densenet121" in html
    assert 'id="ranked"' not in html


def test_benchmarks_page_lists_results_with_citations_and_filters(seeded, client):
    html = client.get("/benchmarks/").content.decode()
    assert "NVIDIA DeepLearningExamples" in html and "29 results" in html
    html = client.get("/benchmarks/?node_type=J-V100-32").content.decode()
    assert "3 results" in html and "local-cpu" not in html.split('id="results"')[1]


def test_scaling_chart_appears_where_several_gpu_counts_exist(seeded, client):
    assert 'id="scaling-data"' not in client.get("/benchmarks/").content.decode()
    node = NodeType.objects.get(name="B-A100-80")
    wl = Workload.objects.get(key="resnet50-2d")
    for gpus, thr in ((2, 4700.0), (4, 9100.0)):
        BenchmarkResult.objects.create(
            node_type=node,
            workload=wl,
            precision="fp16",
            strategy="ddp",
            gpus=gpus,
            batch_size=256,
            image_size=224,
            throughput=thr,
        )
    BenchmarkResult.objects.create(
        node_type=node,
        workload=wl,
        precision="fp16",
        strategy="ddp",
        gpus=1,
        batch_size=256,
        image_size=224,
        throughput=2470.0,
    )
    html = client.get("/benchmarks/?node_type=B-A100-80").content.decode()
    assert 'id="scaling-data"' in html and "1: 2470.0; 2: 4700.0; 4: 9100.0" in html.replace(
        ",", ""
    )


def test_benchmarks_page_runs_a_bounded_number_of_queries(seeded, client):
    def queries():
        with CaptureQueriesContext(connection) as ctx:
            assert client.get("/benchmarks/").status_code == 200
        return len(ctx.captured_queries)

    few = queries()
    node, wl = NodeType.objects.get(name="B-A100-40"), Workload.objects.get(key="gpt2")
    BenchmarkResult.objects.bulk_create(
        BenchmarkResult(
            node_type=node,
            workload=wl,
            precision="bf16",
            strategy="ddp",
            gpus=g,
            batch_size=b,
            image_size=128,
            throughput=100.0 * g,
        )
        for g in (1, 2, 4, 8)
        for b in range(1, 40)
    )
    assert queries() == few


def test_request_links_name_the_hours_they_pre_fill(seeded, client):
    """A prediction of a fraction of an hour links to a request for one whole GPU-hour."""
    html = client.get(
        "/recommend/?model=densenet121&dims=2&image_size=224&dataset_samples=1000"
        "&epochs=1&precision=bf16&gpus=1&batch_size=64&data_sensitivity=public"
    ).content.decode()
    assert "gpu_hours=1&amp;" in html
    assert "Request 1 GPU-hour<" in html and "Request 0 GPU-hours" not in html
