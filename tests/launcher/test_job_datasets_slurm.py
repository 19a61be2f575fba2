"""Dataset confinement on the real Slurm cluster: the folders and symlinks live on the
cluster's side, so the portal resolves them there (`realpath -e` over SSH as an argument list)
before launching. Refusals are per-field 400s and launch nothing."""

from __future__ import annotations

import pytest

from allocations.models import Dataset
from launcher.models import Job
from launcher.slurm import backend as slurm_backend
from tests.launcher.conftest import unique_name
from tests.launcher.slurm_fixtures import make_allocation, slurm_facility  # noqa: F401

pytestmark = [pytest.mark.django_db]


@pytest.fixture
def cluster_store(slurm_facility, project, other_project):
    """On the cluster, in the service account's home: our project's folder with a dataset, a
    symlink into another project's folder and one to /etc; removed afterwards."""
    root = unique_name("portal-test-data-")
    ssh = slurm_backend.slurm_client(slurm_facility).ssh
    ours, theirs = f"{root}/{project.code}", f"{root}/{other_project.code}"
    for args in (
        ["mkdir", "-p", f"{ours}/ct/v1", f"{theirs}/secret"],
        ["ln", "-s", f"../{other_project.code}/secret", f"{ours}/sneaky"],
        ["ln", "-s", "/etc", f"{ours}/system"],
    ):
        assert ssh.run(args).ok()
    slurm_facility.backend_settings = {**slurm_facility.backend_settings, "storage_root": root}
    slurm_facility.save()
    yield root
    ssh.run(["rm", "-rf", "--", root])


@pytest.fixture
def allocation(project, slurm_facility, cluster_store):
    return make_allocation(project, slurm_facility, status="active")


def launch(api, user, allocation, name):
    return api.as_user(user).post(
        "/api/v1/jobs/", {"allocation": allocation.pk, "params": {"dataset": name}}, format="json"
    )


def test_a_dataset_inside_the_project_folder_launches_with_the_clusters_real_path(
    api, researcher, project, allocation, cluster_store
):
    Dataset.objects.create(
        project=project, name="ct", location="ct/v1", modality="ct", sensitivity="public"
    )
    response = launch(api, researcher, allocation, "ct")

    assert response.status_code == 201, response.json()
    path = Job.objects.get().params["data_path"]
    assert path.startswith("/") and path.endswith(f"/{cluster_store}/{project.code}/ct/v1")


@pytest.mark.parametrize(
    "location, words",
    [
        ("sneaky", "outside the project's folder"),
        ("system", "outside the project's folder"),
        ("ct/v2", "no such folder"),
        ("ct/../../XYZ-OTH-002/secret", "'..'"),
    ],
)
def test_escapes_and_missing_folders_on_the_cluster_are_refused(
    api, researcher, project, allocation, location, words
):
    Dataset.objects.create(
        project=project, name="bad", location=location, modality="ct", sensitivity="public"
    )
    response = launch(api, researcher, allocation, "bad")

    assert response.status_code == 400, response.json()
    assert words in response.json()["params"]["dataset"][0]
    assert not Job.objects.exists()
