"""A job's data (`job_data`): a synthetic set (the trainer's generator), or a dataset
registered by the job's own project, resolved and confined on the side that sees the files.
Never a raw path.

A project's folder on a facility is `<storage_root>/<project code>` (`storage_root` in the
facility's backend settings; the local backend defaults to `var/project-data`). A dataset's
location is relative to that folder. At every launch, before any row is written:

1. the dataset is looked up in the allocation's project, by id or by name (another project's
   dataset is "not found", exactly like one that does not exist);
2. its data-sensitivity tier must be one the facility accepts;
3. its location must pass the policy's rules again (relative, no '..': a row could have been
   written before the rules, or by hand);
4. the facility's backend (the `data_paths` capability of launcher/backends/contract.py)
   resolves the project folder and the dataset with every symlink followed (os.path.realpath
   locally, `realpath -e` over SSH on Slurm, as an argument list) and refuses a dataset that
   is missing or lands outside the project folder.

Each refusal is a `DatasetRefused`: HTTP 400 on `params.dataset`, the form's `dataset` field,
and nothing launched. The resolved absolute path travels in the job's params as `data_path`
(written by the portal, never taken from the user) and reaches the trainer as `--data`; the
resolved project folder travels as `data_root` and reaches it as `--data-root`: the trainer
resolves `--data` again on the node when it starts and refuses to read it if it now lies
outside that folder (a symlink swapped in after the launch).

The datasets a notebook session may read pass the same checks
(launcher/notebooks/selectors.py, `notebook_datasets`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from allocations.models import Allocation, Dataset
from allocations.policy import dataset_refusal
from core.bounds import as_id

from ..backends.contract import NO_STORAGE, BackendError, Capability, PathRefused
from ..backends.registry import backend_for, supports
from ..bundles import SYNTHETIC
from .errors import LaunchConflict, LaunchRefused


class DatasetRefused(LaunchRefused):
    """The job's dataset cannot be used (HTTP 400 on params.dataset)."""

    field = "params.dataset"


def find_dataset(*, allocation: Allocation, ref: str) -> Dataset:
    """The allocation's project's dataset named `ref` (or with id `ref`)."""
    datasets = Dataset.objects.filter(project_id=allocation.project_id)
    found = (
        datasets.filter(pk=number).first() if (number := as_id(ref)) is not None else None
    ) or datasets.filter(name=ref).first()
    if found is None:
        raise DatasetRefused(
            f"The project has no dataset {ref!r}: register it on the project's "
            f"datasets page, or use {' or '.join(SYNTHETIC)}."
        )
    return found


def job_data(*, allocation: Allocation, params: Mapping[str, Any]) -> dict[str, Any]:
    """The job's params with its data settled: unchanged for a synthetic set; for a dataset,
    `dataset` (its name), `dataset_id` and `data_path` (resolved, confined). May call the
    backend (SSH): call it outside any transaction. Raises DatasetRefused (400), or
    LaunchConflict (409) when the cluster cannot be reached to check."""
    params = {k: v for k, v in params.items() if k not in ("data_path", "data_root", "dataset_id")}
    ref = str(params.get("dataset") or "synthetic-ct")
    if ref in SYNTHETIC:
        return params
    dataset = find_dataset(allocation=allocation, ref=ref)
    facility = allocation.facility
    why = dataset_refusal(dataset, facility)
    if why:
        raise DatasetRefused(f"{dataset.name} cannot be used here: {why}.")
    no_storage = DatasetRefused(f"{facility.name} {NO_STORAGE}; use {' or '.join(SYNTHETIC)}.")
    if not supports(facility, Capability.DATA_PATHS):
        raise no_storage
    backend = backend_for(facility)
    try:
        real = backend.resolve_data_path(
            facility=facility, project_code=allocation.project.code, location=dataset.location
        )
        # The project's folder itself ("." resolves to it), which the job checks again on
        # the node when it starts (`data_root`).
        root = backend.resolve_data_path(
            facility=facility, project_code=allocation.project.code, location="."
        )
    except PathRefused as refusal:
        if refusal.message == NO_STORAGE:
            raise no_storage from None
        raise DatasetRefused(
            f"{dataset.name} ({dataset.location}) cannot be used: {refusal.message}."
        ) from None
    except BackendError as error:
        raise LaunchConflict(
            f"Could not check {dataset.name} on {facility.name}: {error.message}. Try again."
        ) from None
    return {
        **params,
        "dataset": dataset.name,
        "dataset_id": dataset.pk,
        "data_path": real,
        "data_root": root,
    }
