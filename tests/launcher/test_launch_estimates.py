"""A launch reserves its limit (wall time x GPUs) whatever the prediction; the prediction beside
it comes from the recommender: `measured` where this node type has a result for the model,
`recommender` where only another node type of the same chip has one, `wall-time` (and saying
so) where nothing can be predicted or the prediction exceeds the wall time; the 409 refusal
carries the basis."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.utils import timezone

from allocations.models import Allocation
from benchmarks import catalogue
from benchmarks.demo import _workload
from benchmarks.models import BenchmarkResult, Workload
from launcher.models import Job
from tests.factories import FacilityFactory, NodeTypeFactory, charge

pytestmark = [pytest.mark.django_db]

CHIP = {
    "accelerator": "Chip M",
    "peak_tflops_fp16": 100.0,
    "peak_tflops_bf16": 100.0,
    "peak_tflops_fp32": 10.0,
}
# A tiny job: 40 synthetic images (8 held out for validation, 4 batches of 8 to train on).
PARAMS = {
    "model": "densenet121",
    "epochs": 2,
    "dataset": "synthetic-ct",
    "synthetic_n": 40,
    "size": 64,
    "batch_size": 8,
}


@pytest.fixture
def facility(db):
    for w in catalogue.WORKLOADS:
        _workload(w)
    return FacilityFactory(slug="local-hpc", backend="local", gpu_hour_rate=Decimal("0.50"))


@pytest.fixture
def measured_node(facility):
    """A node type with a result for densenet121 2D at exactly the job's configuration."""
    node = NodeTypeFactory(facility=facility, name="N-MEAS", **CHIP)
    BenchmarkResult.objects.create(
        node_type=node,
        workload=Workload.objects.get(key="densenet121-2d"),
        precision="bf16",
        gpus=1,
        batch_size=8,
        image_size=64,
        throughput=20.0,
        source="measured",
    )
    return node


@pytest.fixture
def neighbour_node(facility, measured_node):
    """Same chip as N-MEAS, but no result of its own."""
    return NodeTypeFactory(facility=facility, name="N-NEIGH", **CHIP)


@pytest.fixture
def bare_node(facility):
    """No result and no peak figure: nothing to predict from."""
    return NodeTypeFactory(facility=facility, name="N-BARE", accelerator="Mystery chip")


def allocation_on(project, node_type, gpu_hours=10):
    today = timezone.localdate()
    return Allocation.objects.create(
        project=project,
        facility=node_type.facility,
        node_type=node_type,
        gpu_hours=Decimal(gpu_hours),
        start_date=today,
        end_date=today + dt.timedelta(days=30),
        status="active",
        account_name=f"acc-{node_type.name.lower()}",
    )


def launch(api, user, allocation, params=PARAMS, wall_time_minutes=60):
    return api.as_user(user).post(
        "/api/v1/jobs/",
        {
            "allocation": allocation.pk,
            "gpus": 1,
            "params": {**params, "wall_time_minutes": wall_time_minutes},
        },
        format="json",
    )


def test_a_node_type_with_a_measured_result_gets_a_measured_estimate(
    api, researcher, project, measured_node
):
    response = launch(api, researcher, allocation_on(project, measured_node))

    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["estimate_source"] == "measured"
    # By hand: 2 epochs x (32 training + 8/3 validation-equivalent images) + 8/3 for the final
    # evaluation = 72 images at 20 images/s = 3.6 s, plus 30 s start-up = 33.6 s.
    assert body["predicted_hours"] == 0.009334  # 33.6 s, rounded up; hours are numbers
    # Reserved: the limit, 60 min x 1 GPU, at the facility's 0.50 a GPU-hour; not the 33.6 s.
    assert body["estimate_gpu_hours"] == 1.0 and isinstance(body["estimate_gpu_hours"], float)
    assert body["estimate_cost"] == "0.5000"  # money: a decimal string
    assert body["estimate_basis"].startswith("Reserved: the limit, 60 min wall time x 1 GPU;")
    assert "Predicted 0.6 min per run from" in body["estimate_basis"]
    assert body["estimate_confidence"] == "high"
    assert "20.0 images/s" in body["estimate_basis"] and "N-MEAS" in body["estimate_neighbour"]


def test_a_node_type_with_only_a_same_chip_neighbour_gets_a_recommender_estimate(
    api, researcher, project, neighbour_node
):
    response = launch(api, researcher, allocation_on(project, neighbour_node))

    assert response.status_code == 201, response.json()
    job = Job.objects.get(pk=response.json()["id"])
    assert job.estimate_source == "recommender"
    assert "N-MEAS" in job.estimate_neighbour  # the result it rests on, named
    assert job.predicted_hours < Decimal(1)
    assert job.estimate_gpu_hours == Decimal("1.000")  # the one-hour limit, not the prediction


def test_nothing_to_predict_from_reserves_the_wall_time_and_says_so(
    api, researcher, project, bare_node
):
    response = launch(api, researcher, allocation_on(project, bare_node), wall_time_minutes=90)

    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["estimate_source"] == "wall-time"
    assert body["estimate_gpu_hours"] == 1.5
    assert body["estimate_basis"].startswith("Reserved: the limit, 90 min wall time x 1 GPU;")
    assert "No prediction: no benchmark result and no peak" in body["estimate_basis"]
    assert body["predicted_hours"] is None


def test_a_prediction_longer_than_the_wall_time_reserves_the_wall_time(
    api, researcher, project, measured_node
):
    long_run = {**PARAMS, "epochs": 100}  # ~203 s predicted against a 1-minute wall time
    response = launch(
        api, researcher, allocation_on(project, measured_node), params=long_run, wall_time_minutes=1
    )

    body = response.json()
    assert body["estimate_source"] == "wall-time"
    assert body["estimate_gpu_hours"] == 0.017  # 1 min, rounded up
    assert body["predicted_hours"] > 1 / 60
    assert "more than the 1-minute wall time" in body["estimate_basis"]


def test_the_409_refusal_carries_the_estimates_basis(api, researcher, project, measured_node):
    allocation = allocation_on(project, measured_node, gpu_hours=1)
    charge(
        allocation=allocation,
        source="slurm",
        external_id="x:1",
        period_start=timezone.now(),
        period_end=timezone.now(),
        gpu_seconds=3600 - 10,
    )  # 10 s left, the job needs ~34 s

    response = launch(api, researcher, allocation)

    assert response.status_code == 409
    body = response.json()
    assert body["estimate_source"] == "measured"
    assert "20.0 images/s" in body["estimate_basis"]
    assert "images/s" in body["detail"]  # the message itself names the basis too
    assert not Job.objects.exists()


def test_an_allocation_without_a_node_type_says_so(api, researcher, project, facility):
    today = timezone.localdate()
    allocation = Allocation.objects.create(
        project=project,
        facility=facility,
        gpu_hours=Decimal(10),
        start_date=today,
        end_date=today + dt.timedelta(days=30),
        status="active",
        account_name="abc-a1",
    )
    body = launch(api, researcher, allocation).json()
    assert body["estimate_source"] == "wall-time"
    assert "names no node type" in body["estimate_basis"]
