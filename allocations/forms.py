"""The request form, in the sections of the Turing's request form."""

from __future__ import annotations

import datetime as dt
from typing import Any, cast

from django import forms
from django.http import QueryDict
from django.utils import timezone

from core import form_tokens
from core.bounds import COUNT_MAX, ID_MAX

from .connection import connection_note
from .models import Allocation, AllocationRequest, Facility, NodeType, Sensitivity
from .selectors import User, visible_allocation_rows, visible_allocations, visible_projects

SECTIONS = (
    ("Project", ("project",)),
    (
        "Service",
        (
            "facility",
            "node_type",
            "kind",
            "purpose",
            "extends",
            "cpu_hours",
            "gpu_hours",
            "cloud_budget",
            "start_date",
            "end_date",
        ),
    ),
    ("Information", ("data_sensitivity", "justification")),
)


def _facility_label(facility: Facility) -> str:
    """The facility's name, and "not connected: ..." where staff must set it up by hand."""
    note = connection_note(facility)
    return f"{facility.name} ({note})" if note else facility.name


class _FacilityChoice(forms.ModelChoiceField):
    def label_from_instance(self, obj: Facility) -> str:
        return _facility_label(obj)


class _NodeTypeChoice(forms.ModelChoiceField):
    def label_from_instance(self, obj: NodeType) -> str:
        return f"{obj.facility.name}: {obj}"


class DateInput(forms.DateInput):
    """An HTML date picker; its value must be ISO 8601 whatever the site's locale."""

    input_type = "date"

    def __init__(self, attrs=None):
        super().__init__(attrs, format="%Y-%m-%d")


class RequestForm(forms.ModelForm):
    class Meta:
        model = AllocationRequest
        fields = [
            "project",
            "facility",
            "node_type",
            "kind",
            "purpose",
            "extends",
            "cpu_hours",
            "gpu_hours",
            "cloud_budget",
            "start_date",
            "end_date",
            "data_sensitivity",
            "justification",
        ]
        widgets = {
            "start_date": DateInput(),
            "end_date": DateInput(),
            "justification": forms.Textarea(attrs={"rows": 6}),
            "kind": forms.RadioSelect,
            "data_sensitivity": forms.Select,
        }
        field_classes = {"facility": _FacilityChoice, "node_type": _NodeTypeChoice}
        labels = {
            "facility": "Which facility?",
            "cpu_hours": "CPU hours requested",
            "gpu_hours": "GPU-hours requested",
            "justification": "Platform justification",
            "extends": "Existing allocation",
            "cloud_budget": "Cloud budget (cloud facilities)",
        }
        help_texts = {
            "kind": "A trial is small (capped per facility), needs one sentence, and is approved "
            "at once where the facility allows it. A full request goes to reviewers.",
            "extends": "For a renewal, top-up or trial conversion: the allocation it builds on.",
            "justification": "What the hours are for and why this system. A full request needs "
            "at least a short paragraph.",
        }

    def __init__(self, *args: Any, user: User, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        fields = self.fields
        project = cast(forms.ModelChoiceField, fields["project"])
        facility = cast(_FacilityChoice, fields["facility"])  # labels: Meta.field_classes
        node_type = cast(_NodeTypeChoice, fields["node_type"])
        extends = cast(forms.ModelChoiceField, fields["extends"])
        project.queryset = visible_projects(user).filter(memberships__user=user.pk)
        facility.queryset = Facility.objects.filter(is_active=True)
        facility.to_field_name = "slug"
        node_type.queryset = NodeType.objects.select_related("facility")
        # The rows without the ledger: the choice needs only what the user may see, and
        # building the ledger's annotations was a third of a form post (docs/performance.md).
        extends.queryset = visible_allocation_rows(user).filter(
            # Closed ones too: a closed allocation can still be renewed for a new period.
            status__in=Allocation.LIVE + (Allocation.Status.EXPIRED, Allocation.Status.CLOSED)
        )
        cast(forms.ChoiceField, fields["data_sensitivity"]).choices = Sensitivity.choices
        cast(forms.ChoiceField, fields["kind"]).choices = AllocationRequest.Kind.choices
        if self.instance.pk and not self.is_bound:
            # The facility field is keyed by slug: an instance's initial value is its pk, which
            # matches no option and came back empty after "changes requested".
            self.initial["facility"] = self.instance.facility.slug
        self._state_units()
        if not self.is_bound and not self.initial.get("start_date"):
            self.initial["start_date"] = timezone.localdate()
            self.initial["end_date"] = timezone.localdate() + dt.timedelta(days=90)

    def _state_units(self) -> None:
        """For a known facility, the hours in its unit (GPU-hours, or CPU-hours where it has no
        GPUs: allocations/units.py) and, on a trial, what the policy allows beside them. The
        page's script does the same when another facility is chosen (`units_data`)."""
        slug = self.data.get("facility") if self.is_bound else self.initial.get("facility")
        kind = self.data.get("kind") if self.is_bound else self.initial.get("kind")
        facility = (
            Facility.objects.prefetch_related("node_types").filter(slug=slug or "").first()
            if slug
            else None
        )
        if facility is None:
            return
        said = _unit_texts(facility)
        gpu_hours, cpu_hours = self.fields["gpu_hours"], self.fields["cpu_hours"]
        gpu_hours.label = said["label"]
        gpu_hours.help_text = " ".join(
            t for t in (said["per"], kind == "trial" and said["cap"]) if t
        )
        if said["cpu"]:
            cpu_hours.help_text = said["cpu_note"]

    def units_data(self) -> dict[str, dict[str, Any]]:
        """{facility slug: its unit's words} for the page's script (json_script): the hours'
        label and help, and whether the separate CPU-hours field applies (one query)."""
        return {
            f.slug: _unit_texts(f)
            for f in Facility.objects.filter(is_active=True).prefetch_related("node_types")
        }

    def clean_start_date(self):
        value = self.cleaned_data["start_date"]
        if self.instance.pk is None and value < timezone.localdate():
            raise forms.ValidationError("The start date cannot be in the past.")
        return value

    def sections(self):
        return [(title, [self[name] for name in names]) for title, names in SECTIONS]


def _unit_texts(facility: Facility) -> dict[str, Any]:
    unit = facility.unit
    return {
        "cpu": unit.is_cpu,
        "label": f"{unit.hours} requested",
        "per": unit.per,
        "cap": f"A trial on {facility.name} is capped at {facility.trial_gpu_hours_cap} "
        f"{unit.hours} and {facility.trial_days} days.",
        "cpu_note": f"Not needed on {facility.name}: the CPU-hours above are what it counts."
        if unit.is_cpu
        else "",
    }


class NewRequestForm(RequestForm):
    """The request form for a new request, with its one-time token (core/form_tokens.py): the
    same form sent twice makes one request."""

    form_token = forms.CharField(
        widget=forms.HiddenInput, required=False, max_length=form_tokens.MAX_LENGTH
    )

    def renew_token(self, token: str) -> None:
        """Send the form back with a new token (the one it came with is no longer good)."""
        assert isinstance(self.data, QueryDict)  # a POST's
        data = self.data.copy()
        data[form_tokens.FIELD] = token
        self.data = data


class _PrefillNumbers(forms.Form):
    """The whole numbers a pre-filling query may carry, parsed by Django (never `isdigit()` and
    `int()`: "²" is a digit to `isdigit()` and no number to `int()`). `node_type` and `project`
    may also be a name or a code: a value that is no id is looked up by name instead."""

    gpu_hours = forms.IntegerField(min_value=0, max_value=COUNT_MAX)
    cpu_hours = forms.IntegerField(min_value=0, max_value=COUNT_MAX)
    node_type = forms.IntegerField(min_value=1, max_value=ID_MAX)
    project = forms.IntegerField(min_value=1, max_value=ID_MAX)
    extends = forms.IntegerField(min_value=1, max_value=ID_MAX)


def initial_from_query(params, user) -> dict:
    """Pre-fill values from query parameters (facility, kind, gpu_hours, node_type, ...).
    Unknown or unusable values are ignored, never an error: it is only a starting point."""
    initial: dict = {}
    for key in ("kind", "purpose", "data_sensitivity", "justification", "start_date", "end_date"):
        if params.get(key):
            initial[key] = params[key]
    numbers = _PrefillNumbers(params)
    numbers.is_valid()
    whole = numbers.cleaned_data  # only the fields that parsed
    for key in ("gpu_hours", "cpu_hours"):
        if key in whole:
            initial[key] = whole[key]
    facility = Facility.objects.filter(slug=params.get("facility", ""), is_active=True).first()
    if facility:
        initial["facility"] = facility.slug
        nodes = facility.node_types.all()
        node = (
            nodes.filter(pk=whole["node_type"]).first() if "node_type" in whole else None
        ) or nodes.filter(name=params.get("node_type", "")).first()
        only = list(nodes[:2])
        node = node or (only[0] if len(only) == 1 else None)  # one node type: no choice to make
        if node:
            initial["node_type"] = node.pk
        if initial.get("kind") == "trial":
            # What the policy allows: the cap and the longest trial, so "Submit" just works.
            initial.setdefault("gpu_hours", facility.trial_gpu_hours_cap)
            if "end_date" not in initial:
                initial["end_date"] = timezone.localdate() + dt.timedelta(
                    days=min(facility.trial_days, 90)
                )
    projects = visible_projects(user).filter(memberships__user=user)
    project = (
        projects.filter(pk=whole["project"]).first()
        if "project" in whole
        else projects.filter(code=params.get("project", "")).first()
    )
    if project is None and projects.count() == 1:
        project = projects.first()
    if project:
        initial["project"] = project.pk
    if "extends" in whole:
        initial["extends"] = whole["extends"]
        base = visible_allocations(user).filter(pk=initial["extends"]).first()
        if base is not None and initial.get("purpose") in CHANGE_PURPOSES:
            initial.update(
                {
                    k: v
                    for k, v in change_initial(base, initial["purpose"]).items()
                    if k not in params
                }
            )
    return initial


CHANGE_PURPOSES = {"renewal", "top_up", "extension", "closure"}


def change_initial(base: Allocation, purpose: str) -> dict:
    """What a renewal, top-up, extension or early closure of `base` starts from: its project,
    facility, node type and data tier carried over; dates and hours that fit the purpose."""
    today = timezone.localdate()
    last = base.requests.filter(status="approved").order_by("-reviewed_at").first()
    initial = {
        "project": base.project_id,
        "facility": base.facility.slug,
        "node_type": base.node_type_id,
        "kind": "full",
        "purpose": purpose,
        "extends": base.pk,
        "cpu_hours": 0,
        "gpu_hours": 0,
        "data_sensitivity": last.data_sensitivity if last else "public",
        "start_date": today,
        "end_date": base.end_date,
    }
    latest = base.facility.latest_end_date
    if purpose == "renewal":
        start = max(base.end_date + dt.timedelta(days=1), today)
        end = start + (base.end_date - base.start_date)
        initial.update(
            start_date=start,
            end_date=min(end, latest) if latest else end,
            gpu_hours=int(base.gpu_hours),
            cpu_hours=base.cpu_hours,
            justification=last.justification if last else "",
        )
    elif purpose == "extension":
        end = max(base.end_date, today) + dt.timedelta(days=90)
        initial["end_date"] = min(end, latest) if latest and latest > base.end_date else end
    return initial
