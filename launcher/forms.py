"""The browser's launch and sweep forms (on the allocation page). Their fields, bounds, defaults
and combination rules are launcher/params.py's, and their values go through the API's own
serializers, so the page and POST /api/v1/jobs/ or /api/v1/sweeps/ accept and refuse the same
things; the serializers' messages land on the matching form fields."""

from __future__ import annotations

from typing import Any, cast

from django import forms

from allocations.models import Dataset
from allocations.units import GPU, Unit

from . import params as P
from . import sweepgrid
from .api.serializers import LaunchInput, SweepInput
from .estimates import capacity_note, default_wall_time


def _bounded(name: str, **kwargs: Any) -> forms.Field:
    spec = P.PARAMS[name]
    if spec.kind is int:
        return forms.IntegerField(min_value=spec.int_low, max_value=spec.int_high, **kwargs)
    return forms.FloatField(min_value=spec.low, max_value=spec.high, **kwargs)


def _range_text(name: str) -> str:
    """ "from LOW to HIGH" of a bounded parameter."""
    low, high = P.PARAMS[name].bounds
    return f"from {low:g} to {high:g}"


def _gpus() -> forms.IntegerField:
    return forms.IntegerField(
        label="GPUs", initial=P.DEFAULT_GPUS, min_value=P.GPUS[0], max_value=P.GPUS[1]
    )


def _in_units(form: LaunchForm | SweepForm) -> None:
    """The `gpus` field in the facility's unit: GPUs, or CPUs where it has no GPUs (the field
    keeps its name: it is the API's `gpus`; allocations/units.py)."""
    unit = form.allocation.facility.unit if form.allocation is not None else GPU
    form.unit = unit
    gpus = form.fields["gpus"]
    gpus.label = unit.many
    if unit.is_cpu:
        gpus.help_text = unit.brief


def _wall_time(label: str) -> forms.IntegerField:
    return forms.IntegerField(
        label=label,
        initial=P.DEFAULT_WALL_TIME_MINUTES,
        min_value=P.WALL_TIME_MINUTES[0],
        max_value=P.WALL_TIME_MINUTES[1],
    )


def _predicted_wall_time(form: LaunchForm | SweepForm, params: dict[str, Any]) -> None:
    """An unbound form's wall time: the prediction for its initial values with a stated margin
    (launcher/estimates.py: default_wall_time), the sentence shown under the field."""
    if form.is_bound or form.allocation is None:
        return
    found = default_wall_time(
        allocation=form.allocation,
        params=params,
        gpus=form.get_initial_for_field(form.fields["gpus"], "gpus") or 1,
    )
    form.fields["wall_time_minutes"].initial = found.minutes
    form.fields["wall_time_minutes"].help_text = found.basis


def _dataset() -> forms.ChoiceField:
    # "wide": two columns of the form where it has them (templates/includes/field.html), so
    # the choice reads whole ("synthetic-ct (generated)" was cut at 1280 px).
    return forms.ChoiceField(
        widget=forms.Select(attrs={"class": "wide"}),
        initial=P.DEFAULT_JOB["dataset"],
        help_text=(
            "A synthetic set, or one of the project's registered datasets (register them on the "
            "project's datasets page)."
        ),
    )


def _dataset_choices(allocation: Any) -> list[tuple[str, str]]:
    """The synthetic sets and the allocation's project's registered datasets (never a path)."""
    choices = [(name, f"{name} (generated)") for name in P.SYNTHETIC]
    if allocation is not None:
        choices += [
            (d.name, f"{d.name}: {d.get_modality_display()}, {d.get_sensitivity_display().lower()}")
            for d in Dataset.objects.filter(project_id=allocation.project_id).only(
                "name", "modality", "sensitivity"
            )
        ]
    return choices


def _put_errors(form: forms.Form, errors: Any, mapping: dict[str, str], prefix: str = "") -> None:
    """Attach a serializer's (nested) errors to form fields: `mapping` names the form field of a
    dotted serializer path; anything unmapped is a non-field error."""
    if isinstance(errors, dict):
        for key, value in errors.items():
            path = f"{prefix}.{key}" if prefix else key
            _put_errors(form, value, mapping, "" if key == "non_field_errors" else path)
        return
    for message in errors if isinstance(errors, list) else [errors]:
        if isinstance(message, dict):
            _put_errors(form, message, mapping, prefix)
            continue
        target = mapping.get(prefix)
        target = target if target in form.fields else None
        if target is None or target not in form.errors:
            form.add_error(target, str(message))


def _number_list(text: str, kind: type) -> list:
    out = []
    for part in text.replace(";", ",").split(","):
        part = part.strip()
        if not part:
            continue
        try:
            out.append(kind(part) if kind is float else int(part))
        except ValueError:
            raise forms.ValidationError(
                f"{part!r} is not a number; separate values with commas."
            ) from None
    if not out:
        raise forms.ValidationError("Give at least one value.")
    return out


class LaunchForm(forms.Form):
    """One training job; POST /api/v1/jobs/ is the same launch."""

    unit: Unit  # the facility's (GPUs or CPUs): `_in_units`

    model = forms.ChoiceField(
        choices=[(m, m) for m in sweepgrid.MODELS], initial=P.DEFAULT_JOB["model"]
    )
    dataset = _dataset()
    synthetic_n = _bounded(
        "synthetic_n",
        label="Synthetic images",
        initial=P.DEFAULT_JOB["synthetic_n"],
        required=False,
        help_text="For a synthetic dataset: 3 images per patient.",
    )
    size = _bounded(
        "size", label="Image size (pixels)", initial=P.DEFAULT_JOB["size"], required=False
    )
    epochs = _bounded("epochs", initial=P.DEFAULT_JOB["epochs"])
    batch_size = _bounded("batch_size", initial=P.DEFAULT_JOB["batch_size"], required=False)
    lr = _bounded("lr", label="Learning rate", initial=P.DEFAULT_JOB["lr"], required=False)
    gpus = _gpus()
    wall_time_minutes = _wall_time("Wall time (minutes)")
    place = forms.BooleanField(
        label="Place it for me",
        required=False,
        help_text="Launch on whichever of the project's allocations is predicted to finish it "
        "first (its queue, its speed, what is left), not necessarily this one; the job's page "
        "shows where it went and why.",
    )

    PARAMS = ("model", "dataset", "synthetic_n", "size", "epochs", "batch_size", "lr")

    def __init__(self, *args: Any, allocation: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.allocation = allocation
        _in_units(self)
        cast(forms.ChoiceField, self.fields["dataset"]).choices = _dataset_choices(allocation)
        _predicted_wall_time(
            self,
            P.with_defaults(
                {k: self.get_initial_for_field(self.fields[k], k) for k in self.PARAMS}
            ),
        )

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data  # what Form.clean returns
        # Fields that failed their own checks are left out; the rest still meet the API's rules.
        body = {
            "allocation": self.allocation.pk if self.allocation else None,
            **{k: data[k] for k in ("gpus", "wall_time_minutes") if data.get(k) is not None},
            "params": {k: data[k] for k in self.PARAMS if data.get(k) not in (None, "")},
        }
        checked = LaunchInput(
            data=body,
            allocations=type(self.allocation).objects.filter(
                pk=getattr(self.allocation, "pk", None)
            )
            if self.allocation
            else None,
        )
        if not checked.is_valid():
            mapping = {f"params.{k}": k for k in self.PARAMS} | {
                "gpus": "gpus",
                "wall_time_minutes": "wall_time_minutes",
            }
            _put_errors(self, checked.errors, mapping)
        elif not self.errors:
            data["params"] = dict(checked.validated_data["params"])
        return data


class SweepForm(forms.Form):
    """A grid of training runs; POST /api/v1/sweeps/ is the same launch."""

    unit: Unit  # the facility's (GPUs or CPUs): `_in_units`

    name = forms.CharField(max_length=120, required=False)
    models = forms.MultipleChoiceField(
        choices=[(m, m) for m in sweepgrid.MODELS],
        initial=P.DEFAULT_SWEEP_GRID["models"],
        widget=forms.CheckboxSelectMultiple,
    )
    lrs = forms.CharField(
        label="Learning rates",
        help_text="Comma-separated, e.g. 1e-3, 1e-4.",
        initial=", ".join(f"{v:g}" for v in P.DEFAULT_SWEEP_GRID["lrs"]),
    )
    lr_steps = forms.CharField(
        label="LR steps (epochs)",
        help_text="Comma-separated StepLR step sizes.",
        initial=", ".join(str(v) for v in P.DEFAULT_SWEEP_GRID["lr_steps"]),
    )
    weight_decays = forms.CharField(
        label="Weight decays",
        help_text=f"Comma-separated, each {_range_text('weight_decay')}.",
        initial=", ".join(f"{v:g}" for v in P.DEFAULT_SWEEP_GRID["weight_decays"]),
    )
    folds = _bounded(
        "folds",
        initial=P.DEFAULT_SWEEP_GRID["folds"],
        help_text="Cross-validation folds: every combination trains once per fold.",
    )
    epochs = _bounded("epochs", initial=P.DEFAULT_SWEEP_GRID["fixed"]["epochs"])
    patience = _bounded("patience", required=False, help_text="Early stopping (epochs); blank: 10.")
    size = _bounded(
        "size", label="Image size (pixels)", initial=P.DEFAULT_SWEEP_GRID["fixed"]["size"]
    )
    batch_size = _bounded("batch_size", initial=P.DEFAULT_SWEEP_GRID["fixed"]["batch_size"])
    dataset = _dataset()
    synthetic_n = _bounded(
        "synthetic_n",
        label="Synthetic images",
        required=False,
        initial=P.DEFAULT_SWEEP_PARAMS["synthetic_n"],
    )
    gpus = _gpus()
    wall_time_minutes = _wall_time("Wall time per run (minutes)")
    concurrency = forms.IntegerField(
        initial=P.DEFAULT_CONCURRENCY,
        min_value=P.CONCURRENCY[0],
        max_value=P.CONCURRENCY[1],
        help_text="Runs at once, at most.",
    )
    early_stop = forms.BooleanField(
        label="Stop hopeless configurations early (ASHA)",
        required=False,
        help_text="At epochs min x eta^k, a configuration outside the top 1/eta of those that "
        "got there stops on every fold; only the runs at once are reserved (docs/sweeps.md).",
    )
    eta = forms.IntegerField(
        label="Keep 1 in (eta)",
        min_value=2,
        max_value=10,
        initial=3,
        required=False,
        help_text="3 keeps the top third at each rung.",
    )
    min_epochs = forms.IntegerField(
        label="First rung (epochs)",
        min_value=1,
        max_value=500,
        initial=1,
        required=False,
        help_text="Epochs before the first comparison.",
    )

    place = forms.BooleanField(
        label="Place it for me",
        required=False,
        help_text="Launch on whichever of the project's allocations is predicted to finish the "
        "sweep first (its queue, its speed, what is left), not necessarily this one; the "
        "estimate above is this allocation's, and the cells' pages show where they went.",
    )

    FIXED = ("epochs", "patience", "size", "batch_size")
    MAPPING = {
        "grid.models": "models",
        "grid.lrs": "lrs",
        "grid.lr_steps": "lr_steps",
        "grid.weight_decays": "weight_decays",
        "grid.folds": "folds",
        **{f"grid.fixed.{k}": k for k in FIXED},
        "params.dataset": "dataset",
        "params.synthetic_n": "synthetic_n",
        "params.batch_size": "batch_size",
        "gpus": "gpus",
        "wall_time_minutes": "wall_time_minutes",
        "concurrency": "concurrency",
        "name": "name",
        "grid.early_stopping": "early_stop",
        "grid.early_stopping.eta": "eta",
        "grid.early_stopping.min_epochs": "min_epochs",
    }

    def __init__(self, *args: Any, allocation: Any = None, **kwargs: Any) -> None:
        # Its own ids: the job form on the same page has fields of the same names, and a label
        # must point at the control in its own form (for people and screen readers alike).
        kwargs.setdefault("auto_id", "sweep_%s")
        super().__init__(*args, **kwargs)
        self.allocation = allocation
        _in_units(self)
        cast(forms.ChoiceField, self.fields["dataset"]).choices = _dataset_choices(allocation)
        self.capacity_note = capacity_note(allocation.facility) if allocation is not None else ""
        first = lambda k: self.get_initial_for_field(self.fields[k], k)  # noqa: E731
        _predicted_wall_time(
            self,
            {
                **P.DEFAULT_SWEEP_PARAMS,
                "dataset": first("dataset"),
                "synthetic_n": first("synthetic_n"),
                "model": (list(first("models")) or [P.DEFAULT_JOB["model"]])[0],
                **{k: first(k) for k in self.FIXED if first(k) is not None},
            },
        )

    @classmethod
    def preset_initial(cls, name: str) -> dict[str, Any]:
        """Initial values that fill the form with a preset's grid (the CLAIRE one: 540 runs)."""
        preset = sweepgrid.PRESETS[name]
        fixed = preset.get("fixed", {})
        return {
            "name": name.upper(),
            "models": preset["models"],
            "lrs": ", ".join(f"{v:g}" for v in preset["lrs"]),
            "lr_steps": ", ".join(str(v) for v in preset["lr_steps"]),
            "weight_decays": ", ".join(f"{v:g}" for v in preset["weight_decays"]),
            "folds": preset["folds"],
            **{k: fixed[k] for k in cls.FIXED if k in fixed},
        }

    def clean_lrs(self) -> list[float]:
        return _number_list(self.cleaned_data["lrs"], float)

    def clean_lr_steps(self) -> list[int]:
        return _number_list(self.cleaned_data["lr_steps"], int)

    def clean_weight_decays(self) -> list[float]:
        return _number_list(self.cleaned_data["weight_decays"], float)

    def body(self) -> dict[str, Any]:
        """The POST /api/v1/sweeps/ body these (cleaned) values make."""
        d = self.cleaned_data
        params = {"dataset": d["dataset"]}
        if d.get("synthetic_n"):
            params["synthetic_n"] = d["synthetic_n"]
        grid: dict[str, Any] = {
            "models": list(d["models"]),
            "lrs": d["lrs"],
            "lr_steps": d["lr_steps"],
            "weight_decays": d["weight_decays"],
            "folds": d["folds"],
            "fixed": {k: d[k] for k in self.FIXED if d.get(k) is not None},
        }
        if d.get("early_stop"):
            grid["early_stopping"] = {
                "method": "asha",
                "eta": d.get("eta") or 3,
                "min_epochs": d.get("min_epochs") or 1,
            }
        return {
            "allocation": getattr(self.allocation, "pk", None),
            "name": d.get("name") or "",
            "gpus": d["gpus"],
            "wall_time_minutes": d["wall_time_minutes"],
            "concurrency": d["concurrency"],
            "params": params,
            "grid": grid,
        }

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data  # what Form.clean returns
        if self.errors:
            return data
        allocations = (
            type(self.allocation).objects.filter(pk=self.allocation.pk) if self.allocation else None
        )
        checked = SweepInput(data=self.body(), allocations=allocations)
        if not checked.is_valid():
            _put_errors(self, checked.errors, self.MAPPING)
        else:
            data["validated"] = checked.validated_data
        return data
