"""The local spawner's session folder: the dataset links in the lasting workdir, and the GPUs
the server sees (launcher/notebooks/hub/local.py); the server itself: test_hub_signon.py."""

from __future__ import annotations

import pytest
from tornado import web

from launcher.notebooks.hub.auth import PortalAuthenticator
from launcher.notebooks.hub.local import cuda_visible_devices, link_datasets


def test_dataset_links_follow_the_sessions_datasets_and_spare_the_users_files(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "notes.ipynb").write_text("{}")

    link_datasets(workdir, {"ct": str(first)})
    link_datasets(workdir, {"ct": str(second), "mri": str(first)})  # the next session's
    links = {p.name: p.readlink() for p in (workdir / "datasets").iterdir()}
    assert links == {"ct": second, "mri": first}

    link_datasets(workdir, {"mri": str(first)})  # ct no longer registered: its link goes
    assert [p.name for p in (workdir / "datasets").iterdir()] == ["mri"]
    assert (workdir / "notes.ipynb").read_text() == "{}"

    (workdir / "datasets" / "mine").mkdir()
    with pytest.raises(web.HTTPError) as refused:
        link_datasets(workdir, {"mine": str(first)})
    assert refused.value.status_code == 409
    assert (workdir / "datasets" / "mine").is_dir()
    with pytest.raises(web.HTTPError) as refused:
        link_datasets(workdir, {"../escape": str(first)})
    assert refused.value.status_code == 400


@pytest.mark.parametrize(
    ("given", "seen"),
    [
        ({"cuda_visible_devices": "0,1"}, "0,1"),
        ({"cuda_visible_devices": [2, 3]}, "2,3"),
        ({"cuda_visible_devices": ""}, ""),
        ({}, ""),
    ],
)
def test_the_server_sees_the_gpus_it_was_given_and_none_without(given, seen):
    assert cuda_visible_devices(given) == seen


def test_the_hub_keeps_the_portal_username_as_it_is():
    # JupyterHub would lowercase it; the portal names a session's hub user by its username.
    assert PortalAuthenticator().normalize_username("Rosalind.F") == "Rosalind.F"
