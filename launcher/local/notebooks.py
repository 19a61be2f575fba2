"""The `notebook` capability of the local backend: a session's folders and options for the hub's
LocalNotebookSpawner (the member's identity, the GPUs it holds), and its charge from the
supervisor's record."""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

from django.conf import settings

from allocations.models import Allocation, Facility

from ..backends.contract import BackendError, NotebookUsage
from ..notebooks.models import NotebookSession
from ..notebooks.selectors import notebook_datasets
from . import cells, identity
from .places import (
    facility_dir,
    facility_slots,
    live_sessions,
    local_project_folder,
    prepare_project_folder,
    resolve_local,
)


def notebook_run_dir(session: NotebookSession) -> Path:
    """A session's own folder (the supervisor's record.json and the server's log)."""
    return Path(settings.NOTEBOOKS_DIR) / str(session.pk)


class LocalNotebooks:
    """The `notebook` capability of the local backend (mixed into LocalBackend): the hub's
    LocalNotebookSpawner runs jupyterhub-singleuser under a supervisor that writes
    `<run_dir>/record.json` and stops the server at `hours`."""

    def notebook_options(self, *, allocation: Allocation, session: NotebookSession) -> dict:
        """workdir `<project folder>/notebooks/<username>` (created; it outlives the session),
        run_dir `settings.NOTEBOOKS_DIR/<session id>` (created), the project's datasets
        resolved and confined as a job's are (launcher.notebooks.selectors.notebook_datasets), and
        the GPU indices handed to the server (CUDA_VISIBLE_DEVICES; "" with no GPU)."""
        facility = allocation.facility
        code = allocation.project.code
        refused = identity.refusal()
        if refused:
            raise BackendError(refused, permanent=True)
        run_as = identity.run_as_for(
            facility=facility, user=session.user, project_id=allocation.project_id
        )
        project_root = Path(local_project_folder(facility, code))
        workdir = project_root / "notebooks" / session.user.get_username()
        run_dir = notebook_run_dir(session)
        try:
            prepare_project_folder(facility, project_root, allocation.project_id)
            (project_root / "notebooks").mkdir(exist_ok=True)
            if run_as:  # the members pass through to their own folders
                (project_root / "notebooks").chmod(0o2770)
            workdir.mkdir(exist_ok=True)
            identity.traversable_dir(run_dir.parent)
            run_dir.mkdir(exist_ok=True)
            run_dir.chmod(0o711)  # the portal's: the member reaches its home/ and runtime/ only
        except OSError as error:
            raise BackendError(
                f"cannot create the notebook's folders: {error}", permanent=True
            ) from error
        datasets, left_out = notebook_datasets(
            allocation=allocation, resolve=lambda location: resolve_local(facility, code, location)
        )
        devices = cells.claim_devices(
            facility_dir(facility),
            owner=f"nb-{session.pk}",
            need=session.gpus,
            slots=facility_slots(facility),
            live=live_sessions(facility),
        )
        if devices is None:
            raise BackendError(
                f"all of {facility.name}'s {facility.unit.many} are in use by running jobs "
                "and notebooks: open it again when one ends",
                permanent=True,
            )
        return {
            "workdir": str(workdir),
            "run_dir": str(run_dir),
            "datasets": datasets,
            "datasets_left_out": left_out,
            "run_as": run_as.as_dict() if run_as else None,
            "limits": (facility.backend_settings or {}).get("limits") or {},
            "cuda_visible_devices": devices,
        }

    def notebook_refusal(self, *, facility: Facility) -> str:
        """Notebooks are arbitrary code: refused where they would run as the portal."""
        return identity.refusal()

    def notebook_usage(self, *, session: NotebookSession) -> NotebookUsage | None:
        """From `<run_dir>/record.json` ({"pid", "started", "ended", "exit", "reason"}, epoch
        seconds): wall seconds = ceil(ended - started); GPU-seconds = wall seconds x gpus, at
        most the reservation (the supervisor stops it at `hours`). None while there
        is no record; `ended` None while it runs. The period charged is in whole seconds, as
        Slurm's is: from the second the run started in, for the wall seconds charged (the run's
        own period to within a second), so the Started and Stopped a page shows differ by the
        seconds charged (a run from 29.6 s to 41.9 s was shown as 29 to 41 and charged 13 s)."""
        record = cells.read_json(Path(session.run_dir or notebook_run_dir(session)) / "record.json")
        if not record or record.get("started") is None:
            return None
        started = float(record["started"])
        ended = record.get("ended")
        span = (float(ended) - started) if ended is not None else 0.0
        wall = math.ceil(span)
        # Wall seconds x GPUs, as Slurm's elapsed x GPUs and as the page states the charge.
        gpu_seconds = min(wall * session.gpus, int(session.reserved_gpu_seconds))
        start = math.floor(started)
        return NotebookUsage(
            started=dt.datetime.fromtimestamp(start, tz=dt.UTC),
            ended=dt.datetime.fromtimestamp(start + wall, tz=dt.UTC) if ended is not None else None,
            gpu_seconds=gpu_seconds,
            wall_seconds=wall,
            external_id=f"{session.allocation.facility_id}/nb-{session.pk}",
            reason=str(record.get("reason") or ""),
        )
