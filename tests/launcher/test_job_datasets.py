"""A job names a dataset of its own project, resolved and confined on the side that sees the
files (here the local backend, with real folders and symlinks), or a synthetic set; never a
raw path. Every refusal is a per-field 400 on params.dataset and launches nothing."""

from __future__ import annotations

import datetime as dt
import os
from decimal import Decimal

import pytest
from django.utils import timezone

from allocations.models import Allocation, Dataset
from launcher import bundles
from launcher.models import Job, Sweep
from tests.factories import FacilityFactory

pytestmark = [pytest.mark.django_db]
GRID = {"models": ["resnet18"], "lrs": [0.001], "lr_steps": [5], "weight_decays": [0.0]}


@pytest.fixture
def store(tmp_path, project, other_project):
    """The facility's project storage: a folder per project, a real dataset in ours, another
    project's secret data beside it, and a symlink in ours that points at theirs."""
    root = tmp_path / "project-data"
    ours, theirs = root / project.code, root / other_project.code
    (ours / "cxr" / "v1").mkdir(parents=True)
    (ours / "cxr" / "v1" / "dataset.json").write_text("{}")
    (theirs / "secret").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    os.symlink(theirs / "secret", ours / "sneaky")
    os.symlink(tmp_path / "elsewhere", ours / "outside")
    os.symlink(ours / "cxr", ours / "alias")  # a symlink that stays inside is fine
    return root


@pytest.fixture
def allocation(project, store):
    facility = FacilityFactory(
        slug="local-data",
        backend="local",
        gpu_hour_rate=Decimal("0.50"),
        backend_settings={"storage_root": str(store)},
        allowed_sensitivity=["public", "internal"],
    )
    today = timezone.localdate()
    return Allocation.objects.create(
        project=project,
        facility=facility,
        gpu_hours=Decimal(50),
        start_date=today,
        end_date=today + dt.timedelta(days=30),
        status="active",
        account_name="data-a1",
    )


def register(project, researcher, name, location, sensitivity="internal"):
    """A dataset row as a registration (or an old or hand-written row) would leave it."""
    return Dataset.objects.create(
        project=project,
        name=name,
        location=location,
        modality="xray",
        sensitivity=sensitivity,
        created_by=researcher,
    )


def launch(api, user, allocation, dataset, **body):
    return api.as_user(user).post(
        "/api/v1/jobs/",
        {"allocation": allocation.pk, "params": {"dataset": dataset, "epochs": 1}, **body},
        format="json",
    )


def assert_refused(response, *words):
    assert response.status_code == 400, response.json()
    message = response.json()["params"]["dataset"][0]
    for word in words:
        assert word in message, message
    assert not Job.objects.exists() and not Sweep.objects.exists()


def test_a_registered_dataset_launches_with_its_resolved_path(
    api, researcher, project, allocation, store
):
    dataset = register(project, researcher, "cxr", "cxr/v1")

    by_name = launch(api, researcher, allocation, "cxr")
    by_id = launch(api, researcher, allocation, str(dataset.pk))

    assert by_name.status_code == 201, by_name.json()
    assert by_id.status_code == 201, by_id.json()
    job = Job.objects.get(pk=by_name.json()["id"])
    expected = os.path.realpath(store / project.code / "cxr" / "v1")
    assert job.params["data_path"] == expected and job.params["dataset_id"] == dataset.pk
    assert bundles.data_spec(job.params) == (expected, None)  # what the trainer gets as --data


def test_a_symlink_that_stays_inside_the_project_folder_is_fine(
    api, researcher, project, allocation, store
):
    register(project, researcher, "aliased", "alias/v1")
    response = launch(api, researcher, allocation, "aliased")
    assert response.status_code == 201, response.json()
    assert Job.objects.get().params["data_path"] == os.path.realpath(
        store / project.code / "cxr" / "v1"
    )


def test_a_symlink_into_another_projects_folder_is_refused(api, researcher, project, allocation):
    register(project, researcher, "theirs", "sneaky")
    assert_refused(launch(api, researcher, allocation, "theirs"), "outside the project's folder")


def test_a_symlink_out_of_the_storage_is_refused(api, researcher, project, allocation):
    register(project, researcher, "out", "outside")
    assert_refused(launch(api, researcher, allocation, "out"), "outside the project's folder")


def test_a_dot_dot_location_is_refused_at_launch_even_if_it_was_stored(
    api, researcher, project, other_project, allocation
):
    register(project, researcher, "climb", f"../{other_project.code}/secret")
    assert_refused(launch(api, researcher, allocation, "climb"), "'..'")


def test_an_absolute_location_is_refused_at_launch(api, researcher, project, allocation):
    register(project, researcher, "abs", "/etc")
    assert_refused(launch(api, researcher, allocation, "abs"), "not an absolute one")


def test_a_missing_folder_is_refused(api, researcher, project, allocation):
    register(project, researcher, "gone", "cxr/v9")
    assert_refused(launch(api, researcher, allocation, "gone"), "no such folder")


def test_a_tier_the_facility_refuses_is_refused(api, researcher, project, allocation):
    register(project, researcher, "wards", "cxr/v1", sensitivity="special")
    assert_refused(
        launch(api, researcher, allocation, "wards"),
        "does not accept",
        "it accepts: public, internal",
    )


def test_another_projects_dataset_is_not_found(
    api, researcher, outsider, other_project, allocation
):
    theirs = register(other_project, outsider, "secret", "secret")
    assert_refused(launch(api, researcher, allocation, "secret"), "has no dataset")
    assert_refused(launch(api, researcher, allocation, str(theirs.pk)), "has no dataset")


@pytest.mark.parametrize("raw", ["/etc/passwd", "../../etc", "cxr/v1", "~root"])
def test_a_raw_path_is_no_dataset(api, researcher, allocation, raw):
    response = launch(api, researcher, allocation, raw)
    assert response.status_code == 400
    assert "paths are not accepted" in response.json()["params"]["dataset"][0]
    assert not Job.objects.exists()


def test_a_sweep_is_held_to_the_same_rules(api, researcher, project, allocation):
    register(project, researcher, "theirs", "sneaky")
    register(project, researcher, "cxr", "cxr/v1")

    refused = launch(api, researcher, allocation, "theirs", workload="sweep", grid=GRID)
    assert_refused(refused, "outside the project's folder")
    accepted = launch(api, researcher, allocation, "cxr", workload="sweep", grid=GRID)
    assert accepted.status_code == 201, accepted.json()
    assert all(
        j.params["dataset"] == "cxr" and j.params["data_path"].endswith("/cxr/v1")
        for j in Job.objects.all()
    )


def test_a_project_without_a_folder_in_the_storage_takes_only_synthetic_sets(
    api, researcher, project, allocation, tmp_path
):
    register(project, researcher, "cxr", "cxr/v1")
    allocation.facility.backend_settings = {"storage_root": str(tmp_path / "empty-storage")}
    allocation.facility.save()
    assert_refused(launch(api, researcher, allocation, "cxr"), "no folder in this facility")
    assert launch(api, researcher, allocation, "synthetic-xray").status_code == 201


def test_the_launch_form_offers_the_projects_datasets_and_shows_a_refusal_on_the_field(
    client, researcher, project, allocation
):
    register(project, researcher, "cxr", "cxr/v1")
    register(project, researcher, "theirs", "sneaky")
    client.force_login(researcher)
    form = {"model": "resnet18", "epochs": "1", "gpus": "1", "wall_time_minutes": "30"}

    page = client.get(f"/allocations/{allocation.pk}/launch/").content.decode()
    assert '<option value="cxr">' in page and '<option value="synthetic-ct"' in page
    refused = client.post(f"/allocations/{allocation.pk}/launch/", {**form, "dataset": "theirs"})
    assert refused.status_code == 400
    assert "outside the project" in refused.context["form"].errors["dataset"][0]
    assert not Job.objects.exists()
    client.post(f"/allocations/{allocation.pk}/launch/", {**form, "dataset": "cxr"})
    assert Job.objects.get().params["dataset"] == "cxr"


def test_on_the_cloud_a_dataset_is_a_key_prefix_under_the_projects_prefix(
    researcher, project, allocation
):
    from launcher.cloud.workload import job_data_prefix
    from launcher.services.launch import job_data

    register(project, researcher, "cxr", "cxr/v1")
    allocation.facility.backend = "aws"
    allocation.facility.backend_settings = {"storage_root": "projects"}
    allocation.facility.save()

    from launcher.backends.registry import backend_for

    assert backend_for(allocation.facility).name == "aws"
    params = job_data(allocation=allocation, params={"dataset": "cxr", "data_path": "/etc"})

    assert params["data_path"] == f"projects/{project.code}/cxr/v1"  # the user's value dropped
    assert job_data_prefix(cluster=None, params=params) == f"projects/{project.code}/cxr/v1/"
