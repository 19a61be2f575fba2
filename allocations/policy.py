"""Facility policy for allocation requests, shared by the form, the API and the services.

`request_errors` returns per-field messages; an empty dict means the request is acceptable.
It only reads: the caller decides whether to refuse (400) or save.

Trial limits per person (`trial_limit_reason`), so free trials cannot be farmed with many
projects. A facility's trials are capped per project (one open trial, `_check_trial`) and per
person: the requester and the project's PI each count every trial they are requester or PI of
on the facility, across all their projects:

- at most `Facility.trial_open_per_person` open at once (submitted, changes requested, or
  approved with its allocation still live);
- at most `Facility.trial_per_person_per_period` submitted in the last
  `Facility.trial_period_days` days (withdrawn and rejected ones do not count).

Beyond either limit a trial is not refused: it is not approved automatically and waits for a
reviewer, with the reason on its timeline (services/requests.py, `request_submit`).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db.models import Q, QuerySet
from django.utils import timezone

from .models import Allocation, AllocationRequest, Dataset, Facility, NodeType

Errors = dict[str, list[str]]
Status = AllocationRequest.Status
_SENTENCE = re.compile(r"[A-Za-z]{2,}.*[A-Za-z]{2,}")
_WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")


@dataclass(frozen=True)
class RequestDraft:
    """The policy-relevant content of a request, whether from a form, the API or the database."""

    project_id: int | None
    facility: Facility | None
    node_type: NodeType | None
    kind: str
    purpose: str
    extends: Allocation | None
    gpu_hours: int
    cpu_hours: int
    start_date: dt.date | None
    end_date: dt.date | None
    data_sensitivity: str
    justification: str

    @classmethod
    def from_request(cls, req: AllocationRequest) -> RequestDraft:
        return cls(
            project_id=req.project_id,
            facility=req.facility,
            node_type=req.node_type,
            kind=req.kind,
            purpose=req.purpose,
            extends=req.extends,
            gpu_hours=req.gpu_hours,
            cpu_hours=req.cpu_hours,
            start_date=req.start_date,
            end_date=req.end_date,
            data_sensitivity=req.data_sensitivity,
            justification=req.justification,
        )

    @classmethod
    def from_values(cls, values: dict[str, Any]) -> RequestDraft:
        project = values.get("project")
        return cls(
            project_id=getattr(project, "pk", project),
            facility=values.get("facility"),
            node_type=values.get("node_type"),
            kind=values.get("kind") or "full",
            purpose=values.get("purpose") or "new",
            extends=values.get("extends"),
            gpu_hours=values.get("gpu_hours") or 0,
            cpu_hours=values.get("cpu_hours") or 0,
            start_date=values.get("start_date"),
            end_date=values.get("end_date"),
            data_sensitivity=values.get("data_sensitivity") or "public",
            justification=(values.get("justification") or "").strip(),
        )


def request_errors(draft: RequestDraft, *, exclude_request_id: int | None = None) -> Errors:
    """Every policy rule the request breaks, keyed by the field to show it on."""
    errors: Errors = {}

    def add(field: str, message: str) -> None:
        errors.setdefault(field, []).append(message)

    facility = draft.facility
    if facility is None:
        return errors  # the field validation already says the facility is required
    if not facility.is_active:
        add("facility", f"{facility.name} is not taking requests.")
    if draft.node_type is not None and draft.node_type.facility_id != facility.pk:
        add("node_type", f"{draft.node_type.name} is not a node type of {facility.name}.")
    if not facility.accepts(draft.data_sensitivity):
        add(
            "data_sensitivity",
            f"{facility.name} does not accept {draft.data_sensitivity} data "
            f"(it accepts: {_tiers(facility)}).",
        )
    _check_dates(draft, facility, add)
    _check_purpose(draft, add)
    if draft.purpose in (AllocationRequest.Purpose.EXTENSION, AllocationRequest.Purpose.CLOSURE):
        _check_change(draft, facility, add)
        return errors
    if draft.kind == AllocationRequest.Kind.TRIAL:
        _check_trial(draft, facility, add, exclude_request_id)
    else:
        _check_full(draft, facility, add)
    if draft.gpu_hours == 0 and draft.cpu_hours == 0:
        add("gpu_hours", "Ask for some GPU-hours or CPU-hours.")
    return errors


def distinct_words(text: str) -> int:
    """How many different words the text has (case-insensitive; digits count, punctuation
    does not): thirty repetitions of one word are one word."""
    return len({w.lower() for w in _WORD.findall(text)})


def _check_full(draft: RequestDraft, facility: Facility, add) -> None:
    minimum = settings.PORTAL_FULL_JUSTIFICATION_MIN_WORDS
    different = distinct_words(draft.justification)
    if different < minimum:
        total = len(_WORD.findall(draft.justification))
        add(
            "justification",
            f"A full request needs a real justification: at least {minimum} different words on "
            f"what the hours are for and why this system (you wrote {total} words, {different} "
            "different).",
        )
    largest = facility.full_gpu_hours_max
    if draft.gpu_hours > largest:
        add(
            "gpu_hours",
            f"A full request on {facility.name} can ask for at most {largest:,} "
            f"{facility.unit.hours}; you "
            f"asked for {draft.gpu_hours:,}. Ask for {largest:,} or fewer, or talk to the "
            "facility about a larger call.",
        )


def _check_dates(draft: RequestDraft, facility: Facility, add) -> None:
    if draft.start_date and draft.end_date and draft.end_date <= draft.start_date:
        add("end_date", "The end date must be after the start date.")
    longest = settings.PORTAL_MAX_ALLOCATION_DAYS
    start = draft.start_date
    if draft.purpose == AllocationRequest.Purpose.EXTENSION and draft.extends is not None:
        start = draft.extends.start_date  # an extension lengthens the allocation it extends
    if start and draft.end_date and (draft.end_date - start).days > longest:
        add(
            "end_date",
            f"An allocation lasts at most {longest} days (this site's limit): "
            f"end on {(start + dt.timedelta(days=longest)).isoformat()} at the "
            "latest, and ask for a renewal after that.",
        )
    if draft.end_date and facility.latest_end_date and draft.end_date > facility.latest_end_date:
        add(
            "end_date",
            f"{facility.name} allocations can end on "
            f"{facility.latest_end_date.isoformat()} at the latest.",
        )


def _check_purpose(draft: RequestDraft, add) -> None:
    needs_base = draft.purpose != AllocationRequest.Purpose.NEW
    if needs_base and draft.extends is None:
        add(
            "extends",
            "Say which allocation this request renews, tops up, converts, extends or closes.",
        )
    if draft.extends is None:
        return
    if draft.extends.project_id != draft.project_id:
        add("extends", "That allocation belongs to another project.")
    if (
        draft.purpose
        in (AllocationRequest.Purpose.TOP_UP, AllocationRequest.Purpose.TRIAL_CONVERSION)
        and draft.extends.status == Allocation.Status.CLOSED
    ):
        add("extends", f"Allocation #{draft.extends.pk} is closed; renew it for a new period.")
    if (
        draft.purpose == AllocationRequest.Purpose.TRIAL_CONVERSION
        and draft.extends.kind != "trial"
    ):
        add("extends", "Only a trial allocation can be converted.")
    if draft.kind == AllocationRequest.Kind.TRIAL and needs_base:
        add("purpose", "A trial is always a new request; convert it with a full request.")


def _check_change(draft: RequestDraft, facility: Facility, add) -> None:
    """An extension moves the end date later (optionally with more GPU-hours), within the
    facility's latest end date and, for a trial, its length; an early closure asks for nothing.
    Both need one sentence of reason, and the allocation must still be open."""
    base = draft.extends
    if not _SENTENCE.search(draft.justification):
        add("justification", "Say in one sentence why.")
    if base is None:
        return
    if base.facility_id != facility.pk:
        add("facility", "A change request is for the allocation's own facility.")
    if base.status == Allocation.Status.CLOSED or (
        draft.purpose == AllocationRequest.Purpose.CLOSURE and base.status not in Allocation.LIVE
    ):
        add("extends", f"Allocation #{base.pk} is {base.get_status_display().lower()}.")
    if draft.purpose == AllocationRequest.Purpose.CLOSURE:
        if draft.gpu_hours or draft.cpu_hours:
            add("gpu_hours", "An early closure asks for no hours.")
        return
    if draft.end_date and draft.end_date <= base.end_date:
        add(
            "end_date",
            f"An extension ends after the current end date, {base.end_date.isoformat()}.",
        )
    if base.kind == AllocationRequest.Kind.TRIAL and draft.end_date:
        longest = base.start_date + dt.timedelta(days=facility.trial_days)
        if draft.end_date > longest:
            add(
                "end_date",
                f"A trial on {facility.name} lasts at most {facility.trial_days} "
                f"days (until {longest.isoformat()}); convert it to a full "
                "allocation to run longer.",
            )
        if draft.gpu_hours and base.gpu_hours + draft.gpu_hours > facility.trial_gpu_hours_cap:
            add(
                "gpu_hours",
                f"A trial on {facility.name} is capped at "
                f"{facility.trial_gpu_hours_cap} {facility.unit.hours} in all.",
            )


def _check_trial(draft: RequestDraft, facility: Facility, add, exclude_id: int | None) -> None:
    cap = facility.trial_gpu_hours_cap
    if draft.gpu_hours > cap:
        add(
            "gpu_hours",
            f"A trial on {facility.name} is capped at {cap} {facility.unit.hours}; you asked for "
            f"{draft.gpu_hours}. Ask for {cap} or fewer, or make a full request.",
        )
    if not _SENTENCE.search(draft.justification):
        add("justification", "Say in one sentence what you will try on the system.")
    if draft.start_date and draft.end_date:
        longest = dt.timedelta(days=facility.trial_days)
        if draft.end_date - draft.start_date > longest:
            add("end_date", f"A trial on {facility.name} lasts at most {facility.trial_days} days.")
    if draft.project_id and _open_trial_exists(draft.project_id, facility.pk, exclude_id):
        add(
            "kind",
            f"This project already has an open trial on {facility.name}; "
            "convert or finish it first.",
        )


def _open_trial_exists(project_id: int, facility_id: int, exclude_id: int | None) -> bool:
    requests = AllocationRequest.objects.filter(
        project_id=project_id,
        facility_id=facility_id,
        kind=AllocationRequest.Kind.TRIAL,
        status__in=[AllocationRequest.Status.SUBMITTED, AllocationRequest.Status.CHANGES_REQUESTED],
    )
    if exclude_id is not None:
        requests = requests.exclude(pk=exclude_id)
    allocations = Allocation.objects.filter(
        project_id=project_id, facility_id=facility_id, kind="trial", status__in=Allocation.LIVE
    )
    return requests.exists() or allocations.exists()


# Project datasets ------------------------------------------------------------------------
# A location is a relative path of plain parts under the project's folder in a facility's
# project storage root. These are the rules that need no filesystem; the launcher resolves
# the path (symlinks included) on the side that sees the files at every launch.
_LOCATION_PART = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,99}$")
RESERVED_DATASET_PREFIX = "synthetic-"


def dataset_location_errors(location: str) -> list[str]:
    """Why `location` is no acceptable dataset location ([] if it is)."""
    if not location:
        return ["Give the dataset's folder, relative to the project's storage folder."]
    if location.startswith("/") or location.startswith("~"):
        return ["Give a path relative to the project's storage folder, not an absolute one."]
    if len(location) > 250:
        return ["At most 250 characters."]
    parts = location.rstrip("/").split("/")
    if any(part in ("", ".", "..") for part in parts):
        return ["No '..', '.' or empty parts: the dataset must lie inside the project's folder."]
    if not all(_LOCATION_PART.match(part) for part in parts):
        return [
            "Use letters, digits, dots, dashes and underscores in each part (not starting "
            "with a dot or a dash)."
        ]
    return []


def _tiers(facility: Facility) -> str:
    """The sensitivity tiers a facility accepts, for a refusal's sentence."""
    return ", ".join(facility.allowed_sensitivity or []) or "none"


def dataset_refusal(dataset: Dataset, facility: Facility) -> str:
    """Why work on `facility` may not read `dataset` ("" when it may): the facility does not
    accept its sensitivity tier, or its location breaks the rules above. The one check a job's
    dataset (launcher `job_data`) and a notebook session's datasets (`notebook_datasets`) pass
    before the backend resolves the path where the files are."""
    if not facility.accepts(dataset.sensitivity):
        return (
            f"{dataset.get_sensitivity_display().lower()} data, which {facility.name} does "
            f"not accept (it accepts: {_tiers(facility)})"
        )
    problems = dataset_location_errors(dataset.location)
    return f"its location {dataset.location!r}: {problems[0]}" if problems else ""


def dataset_errors(*, name: str, location: str) -> Errors:
    """Per-field rules of a dataset beyond its model fields' own."""
    errors: Errors = {}
    if name.lower().startswith(RESERVED_DATASET_PREFIX):
        errors["name"] = [
            f"Names starting with {RESERVED_DATASET_PREFIX!r} are the synthetic "
            "sets'; choose another."
        ]
    problems = dataset_location_errors(location)
    if problems:
        errors["location"] = problems
    return errors


def _trials_of(person_id: int, facility_id: int, exclude_id: int | None) -> QuerySet:
    qs = AllocationRequest.objects.filter(
        Q(requested_by_id=person_id) | Q(project__pi_id=person_id),
        facility_id=facility_id,
        kind=AllocationRequest.Kind.TRIAL,
        purpose=AllocationRequest.Purpose.NEW,
    )
    return qs.exclude(pk=exclude_id) if exclude_id is not None else qs


def trial_limit_reason(req: AllocationRequest) -> str:
    """Why `req` (a trial being submitted) may not be approved automatically, or ""."""
    facility = req.facility
    since = timezone.now() - dt.timedelta(days=facility.trial_period_days)
    people = {req.requested_by_id, req.project.pi_id}
    for person in sorted(p for p in people if p is not None):
        trials = _trials_of(person, facility.pk, req.pk)
        open_now = trials.filter(
            Q(status__in=[Status.SUBMITTED, Status.CHANGES_REQUESTED])
            | Q(status=Status.APPROVED, allocation__status__in=Allocation.LIVE)
        ).count()
        who = "the requester" if person == req.requested_by_id else "the project's PI"
        if open_now >= facility.trial_open_per_person:
            return (
                f"{who} already has {open_now} open trial(s) on {facility.name} (at most "
                f"{facility.trial_open_per_person} per person across all projects)"
            )
        recent = trials.filter(
            submitted_at__gte=since,
            status__in=[Status.SUBMITTED, Status.CHANGES_REQUESTED, Status.APPROVED],
        ).count()
        if recent >= facility.trial_per_person_per_period:
            return (
                f"{who} had {recent} trial(s) on {facility.name} in the last "
                f"{facility.trial_period_days} days (at most "
                f"{facility.trial_per_person_per_period} per person)"
            )
    return ""
