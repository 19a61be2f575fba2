"""The /recommend/ form. It renders and labels the inputs; the rules are the recommender's own
`parse_request` (one rule set for page and API), whose messages are attached per field."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django import forms
from django.http import QueryDict

from benchmarks.recommender import (
    NEEDS,
    REQUEST_PRECISIONS,
    SENSITIVITY_TIERS,
    STRATEGIES,
    Workload,
)

DEFAULTS: dict[str, Any] = {
    "model": "densenet121",
    "dims": "2",
    "image_size": "224",
    "dataset_samples": "100000",
    "epochs": "10",
    "precision": "auto",
    "gpus": "1",
    "batch_size": "32",
    "data_sensitivity": "public",
    "strategy": "auto",
}
NEED_LABELS = {
    "notebooks": "Notebooks (Jupyter)",
    "root": "Root access",
    "public_web_service": "A public web service",
}


def _select(choices: Iterable[tuple[str, str]]) -> forms.Select:
    return forms.Select(choices=list(choices))


class RecommendForm(forms.Form):
    """Every field is text or a select; `parse_request` decides what is valid."""

    model = forms.CharField(label="Model")
    dims = forms.CharField(
        label="Input",
        widget=_select(
            [("1", "1: token sequences (GPT)"), ("2", "2: image slices"), ("3", "3: volumes")]
        ),
    )
    image_size = forms.CharField(
        label="Image size (pixels per side) or tokens per sample",
        required=False,
        widget=forms.NumberInput(attrs={"min": 1}),
    )
    dataset_samples = forms.CharField(
        label="Samples in the dataset", widget=forms.NumberInput(attrs={"min": 1})
    )
    epochs = forms.CharField(label="Epochs", widget=forms.NumberInput(attrs={"step": "any"}))
    precision = forms.CharField(
        label="Precision", widget=_select((p, p) for p in REQUEST_PRECISIONS)
    )
    gpus = forms.CharField(label="GPUs", widget=forms.NumberInput(attrs={"min": 1}))
    batch_size = forms.CharField(
        label="Batch size per GPU", widget=forms.NumberInput(attrs={"min": 1})
    )
    strategy = forms.CharField(
        label="Multi-GPU strategy",
        required=False,
        widget=_select([("auto", "auto (fastest that fits)")] + [(s, s) for s in STRATEGIES]),
    )
    data_sensitivity = forms.CharField(
        label="Data sensitivity", widget=_select((t, t) for t in SENSITIVITY_TIERS)
    )
    budget = forms.CharField(
        label="Budget (USD, optional)",
        required=False,
        widget=forms.NumberInput(attrs={"step": "any", "min": 0}),
    )
    deadline_hours = forms.CharField(
        label="Deadline in hours (optional)",
        required=False,
        widget=forms.NumberInput(attrs={"step": "any", "min": 0}),
    )
    needs = forms.Field(
        label="Needs",
        required=False,
        widget=forms.CheckboxSelectMultiple(choices=[(n, NEED_LABELS[n]) for n in NEEDS]),
    )

    def __init__(self, workloads: Iterable[Workload], query: QueryDict) -> None:
        data = self.values(query)
        super().__init__(data=data)
        models = sorted({w.model for w in workloads})
        self.fields["model"].widget = _select((m, m) for m in models)
        self.submitted = "model" in query

    @staticmethod
    def values(query: QueryDict) -> dict[str, Any]:
        """The defaults overlaid with the query; `needs` may repeat or be comma-separated
        (the onboarding flow passes `needs=notebooks,root`)."""
        data: dict[str, Any] = dict(DEFAULTS)
        data.update({k: query[k] for k in query if k != "needs"})
        data["needs"] = [
            n.strip() for v in query.getlist("needs") for n in v.split(",") if n.strip()
        ]
        return data
