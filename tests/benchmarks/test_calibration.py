"""The recommender's calibration over past jobs: predicted against measured hours per node type
and workload, equal to a hand computation, shown as a table and a chart on /benchmarks/."""

from __future__ import annotations

import pytest

from benchmarks import catalogue
from benchmarks.calibration import calibration_table
from benchmarks.demo import _workload
from benchmarks.models import BenchmarkResult
from tests.factories import FacilityFactory, NodeTypeFactory

pytestmark = [pytest.mark.django_db]


@pytest.fixture
def past_jobs(db):
    """Three jobs on A (densenet121-2d), one on B (resnet18-2d), one without a prediction."""
    workloads = {w.key: _workload(w) for w in catalogue.WORKLOADS}
    facility = FacilityFactory(slug="local-hpc")
    a = NodeTypeFactory(facility=facility, name="A")
    b = NodeTypeFactory(facility=facility, name="B")

    def job(n, node, key, predicted, measured):
        BenchmarkResult.objects.create(
            node_type=node,
            workload=workloads[key],
            precision="fp32",
            gpus=1,
            batch_size=8,
            image_size=64,
            throughput=10.0,
            source="job",
            catalogue_key=f"job-{n}",
            predicted_hours=predicted,
            measured_hours=measured,
        )

    job(1, a, "densenet121-2d", 1.0, 0.8)  # +25%
    job(2, a, "densenet121-2d", 0.5, 1.0)  # -50%
    job(3, a, "densenet121-2d", 2.0, 2.0)  # 0%
    job(4, b, "resnet18-2d", 0.3, 0.4)  # -25%
    job(5, b, "resnet18-2d", None, 0.4)  # no prediction: not in the table
    BenchmarkResult.objects.create(  # a harness result: not a job
        node_type=a,
        workload=workloads["densenet121-2d"],
        precision="fp32",
        gpus=1,
        batch_size=8,
        image_size=64,
        throughput=10.0,
        source="measured",
    )


def test_the_table_equals_a_hand_computation(past_jobs):
    rows = {(r.node_type, r.workload): r for r in calibration_table()}
    assert set(rows) == {("A", "densenet121-2d"), ("B", "resnet18-2d")}
    a = rows[("A", "densenet121-2d")]
    assert a.jobs == 3 and a.facility == "local-hpc"
    assert a.median_predicted_hours == pytest.approx(1.0)  # median of 1.0, 0.5, 2.0
    assert a.median_measured_hours == pytest.approx(1.0)  # median of 0.8, 1.0, 2.0
    assert a.median_abs_error == pytest.approx(0.25)  # median of 25%, 50%, 0%
    assert a.median_signed_error == pytest.approx(0.0)  # median of +25%, -50%, 0%
    assert a.worst_abs_error == pytest.approx(0.5)
    b = rows[("B", "resnet18-2d")]
    assert b.jobs == 1 and b.median_signed_error == pytest.approx(-0.25)
    assert b.percent() == {
        "abs": "25.0%",
        "bias": "-25.0%",
        "worst": "25.0%",
        "predicted": "0.3",
        "measured": "0.4",
    }


def test_the_benchmarks_page_shows_the_table_and_its_chart(client, past_jobs):
    page = client.get("/benchmarks/").content.decode()
    assert 'id="calibration"' in page and 'id="calibration-data"' in page
    assert 'data-node-type="A" data-workload="densenet121-2d"' in page
    assert "25.0%" in page and "-25.0%" in page


def test_without_measured_jobs_the_page_says_the_table_fills_as_jobs_succeed(client, db):
    page = client.get("/benchmarks/").content.decode()
    assert 'id="calibration-empty"' in page and 'id="calibration-data"' not in page
