"""Project datasets: register, edit and remove, each audited on the project.

Who may: members of the project and staff (the launcher's rule: reviewers see, only staff act
on others' work); others get NotFound (404) or Forbidden (403, reviewers)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db import IntegrityError, transaction

from core.errors import Forbidden, Invalid, NotFound, clean_or_invalid

from ..models import Dataset, Project
from ..policy import dataset_errors
from ..selectors import can_act_on_project, can_see_project
from ..transitions import record_event
from .errors import PolicyError

if TYPE_CHECKING:
    from django.contrib.auth.models import User as AuthUser

    from ..roles import User

DATASET_FIELDS = ("name", "location", "modality", "sensitivity", "sha256")


def _check(by: User, project: Project) -> None:
    if not can_see_project(by, project):
        raise NotFound("Not found.")
    if not can_act_on_project(by, project):
        raise Forbidden("Only members of the project (or staff) can manage its datasets.")


def _validate_and_save(dataset: Dataset) -> None:
    dataset.location = dataset.location.strip().rstrip("/")
    dataset.sha256 = dataset.sha256.strip().lower()
    errors = dataset_errors(name=dataset.name, location=dataset.location)
    try:
        clean_or_invalid(dataset, exclude=["project", "created_by"], validate_unique=False)
    except Invalid as error:
        for field, messages in error.field_errors.items():
            errors.setdefault(field, []).extend(messages)
    taken = Dataset.objects.filter(project_id=dataset.project_id, name=dataset.name).exclude(
        pk=dataset.pk
    )
    if taken.exists():
        errors.setdefault("name", []).append("The project already has a dataset of that name.")
    if errors:
        raise PolicyError(errors)
    try:
        with transaction.atomic():
            dataset.save()
    except IntegrityError:  # registered by someone else a moment ago
        raise PolicyError("The project already has a dataset of that name.", field="name") from None


@transaction.atomic
def dataset_create(
    *,
    by: AuthUser,
    project: Project,
    name: str,
    location: str,
    modality: str,
    sensitivity: str,
    sha256: str = "",
) -> Dataset:
    """Register a dataset of `project`. Per-field PolicyError (400), nothing saved, for a bad
    name or location (absolute, '..', odd characters), an unknown modality or tier, a taken
    name or a malformed checksum."""
    _check(by, project)
    dataset = Dataset(
        project=project,
        name=name.strip(),
        location=location,
        modality=modality,
        sensitivity=sensitivity,
        sha256=sha256 or "",
        created_by=by,
    )
    _validate_and_save(dataset)
    record_event(
        project,
        actor=by,
        from_state="",
        to_state="dataset_added",
        comment=f"{dataset.name} at {dataset.location} ({dataset.modality}, {dataset.sensitivity})",
    )
    return dataset


@transaction.atomic
def dataset_update(*, dataset: Dataset, by: User, **fields: Any) -> Dataset:
    """Edit a dataset (any of name, location, modality, sensitivity, sha256), audited with
    what changed. The same rules as dataset_create; it never moves to another project."""
    _check(by, dataset.project)
    unknown = set(fields) - set(DATASET_FIELDS)
    if unknown:
        raise TypeError(f"Unknown dataset fields: {sorted(unknown)}")
    locked = Dataset.objects.select_for_update().select_related("project").get(pk=dataset.pk)
    changes = []
    for key, value in fields.items():
        value = (value or "").strip() if isinstance(value, str) or value is None else value
        if getattr(locked, key) != value:
            changes.append(f"{key}: {getattr(locked, key)!r} -> {value!r}")
            setattr(locked, key, value)
    if not changes:
        return locked
    _validate_and_save(locked)
    record_event(
        locked.project,
        actor=by,
        from_state="",
        to_state="dataset_changed",
        comment=f"{locked.name}: " + "; ".join(changes),
    )
    return locked


@transaction.atomic
def dataset_delete(*, dataset: Dataset, by: User) -> None:
    """Remove a dataset's registration (the files stay where they are), audited. Jobs that
    named it keep their resolved path in their parameters."""
    _check(by, dataset.project)
    name, location, project = dataset.name, dataset.location, dataset.project
    Dataset.objects.filter(pk=dataset.pk).delete()
    record_event(
        project,
        actor=by,
        from_state="",
        to_state="dataset_removed",
        comment=f"{name} at {location}",
    )
