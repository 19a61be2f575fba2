"""Where the local backend keeps things, and what holds its slots: the job folders, a facility's
slots, the project's folder on this machine (shared by the project's group) and the notebook
sessions that may hold GPUs (launcher/local/backend.py and notebooks.py use these)."""

from __future__ import annotations

import os
from pathlib import Path

from django.conf import settings

from allocations.models import Facility

from ..backends.contract import PathRefused, confined, project_folder
from ..models import Job
from ..notebooks.models import NotebookSession
from . import identity

DEFAULT_SLOTS = 2


def jobs_root() -> Path:
    return Path(getattr(settings, "LOCAL_JOBS_DIR", "") or settings.VAR_DIR / "local-jobs")


def facility_dir(facility: Facility) -> Path:
    return jobs_root() / facility.slug


def job_dir(facility: Facility, token: str) -> Path:
    return facility_dir(facility) / token


def cell_dir(facility: Facility, job: Job) -> Path:
    return Path(job.workdir or job_dir(facility, job.token)) / str(job.array_index or 0)


def facility_slots(facility: Facility) -> int:
    """How many GPUs (or CPU slots) run at once: `slots` in the facility's backend settings,
    else its largest node type's accelerators, else settings.LOCAL_JOB_SLOTS."""
    configured = (facility.backend_settings or {}).get("slots")
    if configured:
        return max(int(configured), 1)
    per_node = list(facility.node_types.order_by().values_list("accelerators_per_node", flat=True))
    return max(per_node or [int(getattr(settings, "LOCAL_JOB_SLOTS", DEFAULT_SLOTS))])


def prepare_project_folder(facility: Facility, folder: Path, project_id: int) -> None:
    """The project's folder, shared by its members' group and closed to everyone else; the
    portal's default storage root (under var/) is made traversable (0711), a site's is left as
    the site set it."""
    if not folder.parent.exists() and Path(settings.VAR_DIR) in folder.parents:
        identity.traversable_dir(folder.parent)
    elif folder.parent == Path(settings.VAR_DIR) / "project-data":
        folder.parent.chmod(0o711)
    identity.project_dir(folder, project_id=project_id)


def local_project_folder(facility: Facility, project_code: str) -> str:
    """`<storage_root or var/project-data>/<project code>` on this machine, absolute."""
    root = project_folder(
        facility.backend_settings, project_code, default_root=str(settings.VAR_DIR / "project-data")
    )
    return root if os.path.isabs(root) else os.path.join(str(settings.BASE_DIR), root)


def resolve_local(facility: Facility, project_code: str, location: str) -> str:
    """`location` in the project's folder on this machine, every symlink followed and
    confined (LocalBackend.resolve_data_path)."""
    root = local_project_folder(facility, project_code)
    path = os.path.join(root, location)
    if not os.path.isdir(root):
        raise PathRefused("the project has no folder in this facility's storage yet")
    real_root, real = os.path.realpath(root), os.path.realpath(path)
    if not os.path.exists(real):
        raise PathRefused("no such folder in the project's storage")
    if not confined(real_root, real):
        raise PathRefused("it resolves to a place outside the project's folder (a symlink?)")
    return real


def live_sessions(facility: Facility) -> set[str]:
    """The claim owners (`nb-<id>`) of the facility's sessions that may hold GPUs now."""
    live = NotebookSession.objects.filter(
        allocation__facility=facility, state__in=NotebookSession.LIVE
    ).values_list("pk", flat=True)
    return {f"nb-{pk}" for pk in live}
