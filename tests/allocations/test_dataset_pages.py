"""/projects/<id>/datasets/: members register, edit and remove their project's datasets in the
browser through the same services as the API (audited, per-field errors, nothing half-saved);
reviewers see the list read-only; anyone else gets 404."""

from __future__ import annotations

import pytest
from django.test import Client

from allocations.models import Dataset
from allocations.selectors import timeline

pytestmark = pytest.mark.django_db
VALID = {
    "name": "cxr",
    "location": "cxr/v1",
    "modality": "xray",
    "sensitivity": "internal",
    "sha256": "",
}


def client_for(user):
    client = Client()
    client.force_login(user)
    return client


def test_a_member_registers_edits_and_removes_a_dataset(researcher, project):
    client = client_for(researcher)
    url = f"/projects/{project.pk}/datasets/"

    created = client.post(url, VALID, follow=True)
    dataset = Dataset.objects.get()
    assert "Dataset cxr registered." in created.content.decode()
    assert (dataset.location, dataset.created_by) == ("cxr/v1", researcher)

    client.post(f"{url}{dataset.pk}/", {**VALID, "location": "cxr/v2"})
    assert Dataset.objects.get().location == "cxr/v2"

    client.post(f"{url}{dataset.pk}/delete/")
    assert not Dataset.objects.exists()
    assert [e.to_state for e in timeline(project).filter(to_state__startswith="dataset")] == [
        "dataset_added",
        "dataset_changed",
        "dataset_removed",
    ]


@pytest.mark.parametrize(
    "location, message",
    [("../other/secret", "'..'"), ("/etc", "not an absolute one"), ("a b", "letters, digits")],
)
def test_a_bad_location_is_an_error_on_its_field_and_saves_nothing(
    researcher, project, location, message
):
    page = client_for(researcher).post(
        f"/projects/{project.pk}/datasets/", {**VALID, "location": location}
    )
    assert page.status_code == 400
    assert message in page.context["form"].errors["location"][0]
    assert not Dataset.objects.exists()


def test_a_reviewer_sees_the_list_without_the_forms_and_cannot_change_it(
    researcher, reviewer, project
):
    dataset = Dataset.objects.create(project=project, created_by=researcher, **VALID)
    client = client_for(reviewer)
    page = client.get(f"/projects/{project.pk}/datasets/").content.decode()
    assert "cxr/v1" in page and 'id="dataset-form"' not in page

    client.post(f"/projects/{project.pk}/datasets/", {**VALID, "name": "mine"})
    client.post(f"/projects/{project.pk}/datasets/{dataset.pk}/", {**VALID, "location": "x"})
    client.post(f"/projects/{project.pk}/datasets/{dataset.pk}/delete/")
    assert list(Dataset.objects.values_list("name", "location")) == [("cxr", "cxr/v1")]


def test_someone_outside_the_project_gets_404_everywhere(researcher, outsider, project):
    dataset = Dataset.objects.create(project=project, created_by=researcher, **VALID)
    client = client_for(outsider)
    base = f"/projects/{project.pk}/datasets/"
    assert client.get(base).status_code == 404
    assert client.post(base, {**VALID, "name": "x"}).status_code == 404
    assert client.post(f"{base}{dataset.pk}/", VALID).status_code == 404
    assert client.post(f"{base}{dataset.pk}/delete/").status_code == 404
    assert Dataset.objects.count() == 1
