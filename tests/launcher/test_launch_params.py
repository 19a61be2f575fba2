"""Parameters that cannot run together are refused at launch, field by field, by the API, the
launch form and the services alike (launcher/params.py), and nothing is created; the defaults
fill in a job that learns."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.utils import timezone

from allocations.models import Allocation
from launcher import params as P
from launcher import services
from launcher.models import Job, Sweep
from launcher.params import DEFAULT_JOB, ParamsError
from tests.factories import FacilityFactory

pytestmark = [pytest.mark.django_db]


@pytest.fixture
def allocation(project):
    # 8 slots: the 8-GPU case below is about the batch per GPU, not about the facility's size
    # (tests/launcher/test_launch_gpu_limit.py).
    facility = FacilityFactory(
        slug="local-params",
        backend="local",
        backend_settings={"slots": 8},
        gpu_hour_rate=Decimal("0.50"),
    )
    today = timezone.localdate()
    return Allocation.objects.create(
        project=project,
        facility=facility,
        gpu_hours=Decimal(100),
        start_date=today,
        end_date=today + dt.timedelta(days=30),
        status="active",
        account_name="params-a1",
    )


def launch(api, user, allocation, **body):
    return api.as_user(user).post(
        "/api/v1/jobs/", {"allocation": allocation.pk, **body}, format="json"
    )


@pytest.mark.parametrize(
    "params, gpus, field",
    [
        ({"synthetic_n": 24, "batch_size": 32}, 1, "batch_size"),  # 18 training images < 32
        ({"synthetic_n": 300, "batch_size": 64}, 8, "batch_size"),  # 240 images over 8 GPUs = 30
        ({"synthetic_n": 24, "folds": 6, "fold": 0}, 1, "folds"),  # 4 patients of a class < 6 folds
        ({"folds": 3, "fold": 3}, 1, "fold"),
        ({"synthetic_n": 8}, 1, "synthetic_n"),  # 3 patients: 1 of a class
        ({"dims": 3}, 1, "dims"),  # synthetic sets are 2D
        ({"batch_size": 1}, 1, "batch_size"),  # batch norm needs 2
    ],
)
def test_a_combination_that_cannot_run_is_a_400_on_its_field(
    api, researcher, allocation, params, gpus, field
):
    response = launch(api, researcher, allocation, gpus=gpus, params=params)

    assert response.status_code == 400, response.json()
    assert set(response.json()) == {"params"}
    assert set(response.json()["params"]) == {field}
    assert not Job.objects.exists()


def test_an_unknown_model_is_named(api, researcher, allocation):
    response = launch(api, researcher, allocation, params={"model": "vgg16"})
    assert response.status_code == 400 and set(response.json()["params"]) == {"model"}


def test_a_dataset_on_disk_is_not_judged_by_synthetic_sizes(api, researcher, allocation, tmp_path):
    from allocations.models import Dataset

    (tmp_path / allocation.project.code / "ct").mkdir(parents=True)
    allocation.facility.backend_settings = {
        **allocation.facility.backend_settings,
        "storage_root": str(tmp_path),
    }
    allocation.facility.save()
    Dataset.objects.create(
        project=allocation.project, name="ct", location="ct", modality="ct", sensitivity="public"
    )
    response = launch(api, researcher, allocation, params={"dataset": "ct", "batch_size": 512})
    assert response.status_code == 201, response.json()
    params = response.json()["params"]
    assert {k: params[k] for k in ("dataset", "batch_size", "model", "epochs")} == {
        "dataset": "ct",
        "batch_size": 512,
        "model": DEFAULT_JOB["model"],
        "epochs": DEFAULT_JOB["epochs"],
    }


def test_an_empty_launch_is_the_default_job_that_learns(api, researcher, allocation):
    response = launch(api, researcher, allocation)

    assert response.status_code == 201, response.json()
    assert response.json()["params"] == {**DEFAULT_JOB, "seed": P.DEFAULT_SEED}
    assert response.json()["wall_time_minutes"] == P.DEFAULT_WALL_TIME_MINUTES
    assert P.combination_errors(DEFAULT_JOB, gpus=1) == {}


def test_the_service_refuses_what_the_api_would(researcher, allocation):
    with pytest.raises(ParamsError) as refused:
        services.job_launch(
            by=researcher,
            allocation=allocation,
            gpus=1,
            wall_time_minutes=10,
            params={"dataset": "synthetic-ct", "synthetic_n": 24, "batch_size": 32},
        )
    assert set(refused.value.errors) == {"batch_size"}
    grid = {
        "models": ["resnet18"],
        "lrs": [1e-3],
        "lr_steps": [5],
        "weight_decays": [0.0],
        "folds": 6,
    }
    with pytest.raises(ParamsError) as refused:
        services.sweep_launch(
            by=researcher,
            allocation=allocation,
            grid=grid,
            gpus=1,
            wall_time_minutes=10,
            params={"dataset": "synthetic-ct", "synthetic_n": 24},
        )
    assert set(refused.value.errors) == {"folds"}
    assert not Job.objects.exists() and not Sweep.objects.exists()


def test_the_launch_form_shows_the_same_refusal_on_its_field(client, researcher, allocation):
    client.force_login(researcher)
    response = client.post(
        f"/allocations/{allocation.pk}/launch/",
        {
            "model": "resnet18",
            "dataset": "synthetic-ct",
            "synthetic_n": "24",
            "size": "32",
            "epochs": "2",
            "batch_size": "32",
            "lr": "0.001",
            "gpus": "1",
            "wall_time_minutes": "10",
        },
    )

    assert response.status_code == 400
    page = response.content.decode()
    assert 'id="id_batch_size_errors"' in page and "use a batch size of at most 18" in page
    assert 'id="id_epochs_errors"' not in page
    assert not Job.objects.exists()


def test_the_synthetic_patient_count_matches_the_generator(tmp_path):
    from launcher.workloads.ctxray.synth import synthesize

    synthesize(str(tmp_path), "ct", n=25, size=16, seed=0)
    rows = [line.split(",") for line in (tmp_path / "labels.csv").read_text().splitlines()[1:]]
    label_of = {row[3]: row[1] for row in rows}
    assert P.synthetic_patients(25) == (
        list(label_of.values()).count("0"),
        list(label_of.values()).count("1"),
    )
