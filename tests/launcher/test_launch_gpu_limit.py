"""Asking for more GPUs than a facility has is refused in the facility's terms, first, on
`gpus` (issue 39: 64 GPUs on the `local` workstation got a message about the batch size): the
API (jobs and sweeps) and the launch form say how many GPUs the facility offers per job, from
its slots where the backend knows them, else from the catalogue's largest node. The batch-size
rule still speaks when the GPU count is one the facility can run."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.utils import timezone

from allocations.models import Allocation
from launcher.estimates import gpus_refusal
from launcher.models import Job, Sweep
from tests.factories import FacilityFactory, NodeTypeFactory

pytestmark = [pytest.mark.django_db]
GRID = {
    "models": ["resnet18"],
    "lrs": [0.001],
    "lr_steps": [5],
    "weight_decays": [0.0001],
    "folds": 2,
    "fixed": {"epochs": 1, "size": 32},
}


def allocate(project, facility) -> Allocation:
    today = timezone.localdate()
    return Allocation.objects.create(
        project=project,
        facility=facility,
        gpu_hours=Decimal(400),
        start_date=today,
        end_date=today + dt.timedelta(days=30),
        status="active",
        account_name=f"{facility.slug}-a1",
    )


@pytest.fixture
def workstation(project, tmp_path, settings):
    """The `local` facility of `make run`: one node type with 2 accelerators, no slots set, so
    the catalogue gives the local backend its 2 slots."""
    settings.LOCAL_JOBS_DIR = tmp_path / "local-jobs"
    facility = FacilityFactory(slug="local", name="Local workstation", backend="local")
    NodeTypeFactory(facility=facility, name="L-CPU-2", accelerators_per_node=2)
    return allocate(project, facility)


@pytest.fixture
def cluster(project):
    """A Slurm facility (no slots known to the portal: its scheduler decides) whose largest
    node type has 4 GPUs."""
    facility = FacilityFactory(slug="jade", name="JADE2", backend="slurm", backend_settings={})
    NodeTypeFactory(facility=facility, name="J-V100-2", accelerators_per_node=2)
    NodeTypeFactory(facility=facility, name="J-V100-4", accelerators_per_node=4)
    return allocate(project, facility)


def test_the_api_says_what_the_facility_offers_for_64_gpus(api, researcher, workstation):
    client = api.as_user(researcher)
    job = client.post("/api/v1/jobs/", {"allocation": workstation.pk, "gpus": 64}, format="json")
    sweep = client.post(
        "/api/v1/sweeps/",
        {"allocation": workstation.pk, "gpus": 64, "wall_time_minutes": 30, "grid": GRID},
        format="json",
    )

    for response in (job, sweep):
        assert response.status_code == 400, response.json()
        body = response.json()
        assert list(body) == ["gpus"]  # not params.batch_size
        assert body["gpus"] == [
            "Local workstation runs at most 2 GPUs at a time, so a run needing "
            "64 could never start there: ask for at most 2."
        ]
    assert not Job.objects.exists() and not Sweep.objects.exists()


def test_the_launch_form_puts_the_facility_limit_under_gpus_alone(client, researcher, workstation):
    client.force_login(researcher)
    response = client.post(
        f"/allocations/{workstation.pk}/launch/",
        {
            "model": "densenet121",
            "dataset": "synthetic-ct",
            "synthetic_n": "300",
            "size": "64",
            "epochs": "8",
            "batch_size": "16",
            "lr": "0.001",
            "gpus": "64",
            "wall_time_minutes": "60",
        },
    )

    assert response.status_code == 400
    page = response.content.decode()
    assert 'id="id_gpus_errors"' in page
    assert "Local workstation runs at most 2 GPUs" in page and "ask for at most 2" in page
    assert 'id="id_batch_size_errors"' not in page and "training images per GPU" not in page
    assert not Job.objects.exists()


def test_a_cluster_offers_one_node_of_its_largest_node_type(api, researcher, cluster):
    assert gpus_refusal(cluster.facility, 4) is None
    response = api.as_user(researcher).post(
        "/api/v1/jobs/", {"allocation": cluster.pk, "gpus": 64}, format="json"
    )

    assert response.status_code == 400, response.json()
    assert response.json() == {
        "gpus": [
            "JADE2 offers at most 4 GPUs per job (a job runs on one node, and its largest, "
            "J-V100-4, has 4), so a run needing 64 could never start there: ask for at most 4."
        ]
    }


def test_the_catalogues_per_job_limit_is_said_where_it_is_lower_than_a_node(project):
    """`max_accelerators`: the most one job may use on a node type (the recommender's rule)."""
    shared = FacilityFactory(slug="shared", name="Shared box", backend="slurm", backend_settings={})
    NodeTypeFactory(facility=shared, name="S-8", accelerators_per_node=8, max_accelerators=2)

    assert gpus_refusal(shared, 2) is None
    assert gpus_refusal(shared, 3) == (
        "Shared box offers at most 2 GPUs per job (S-8 allows 2 per job), so a run needing 3 "
        "could never start there: ask for at most 2."
    )


def test_slots_beyond_one_node_do_not_let_a_job_past_the_node(project, tmp_path, settings):
    settings.LOCAL_JOBS_DIR = tmp_path / "local-jobs"
    box = FacilityFactory(slug="box", name="Box", backend="local", backend_settings={"slots": 4})
    NodeTypeFactory(facility=box, name="B-1", accelerators_per_node=1)

    assert gpus_refusal(box, 1) is None
    assert gpus_refusal(box, 2).startswith("Box offers at most 1 GPU per job (a job runs on one")
    assert gpus_refusal(box, 8).startswith("Box offers at most 1 GPU per job")


def test_a_facility_without_gpu_nodes_in_the_catalogue_sets_no_limit(project):
    bare = FacilityFactory(slug="bare", name="Bare", backend="slurm", backend_settings={})
    assert gpus_refusal(bare, 64) is None
    NodeTypeFactory(facility=bare, name="CPU-only", accelerators_per_node=0)
    assert gpus_refusal(bare, 64) is None


def test_the_batch_size_rule_still_speaks_for_a_gpu_count_the_facility_runs(
    api, researcher, workstation
):
    response = api.as_user(researcher).post(
        "/api/v1/jobs/",
        {
            "allocation": workstation.pk,
            "gpus": 2,
            "params": {"dataset": "synthetic-ct", "synthetic_n": 24, "batch_size": 16},
        },
        format="json",
    )

    assert response.status_code == 400, response.json()
    body = response.json()
    assert list(body) == ["params"] and list(body["params"]) == ["batch_size"]
    assert "training images per GPU" in body["params"]["batch_size"][0]
