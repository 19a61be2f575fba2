"""`/projects/<id>/datasets/`: a project's datasets, registered, edited and removed in the
browser through the same services as `datasets/` in the API. Members (and staff) manage them;
reviewers see them read-only; anyone else gets 404."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from core.refusals import form_call, form_status, refused_to

from . import selectors, services
from .models import Dataset, Project


class DatasetForm(forms.ModelForm):
    class Meta:
        model = Dataset
        fields = ["name", "location", "modality", "sensitivity", "sha256"]
        help_texts = {
            "location": "The dataset's folder, relative to the project's folder in each "
            "facility's project storage (e.g. cxr/v1). No '..' and no absolute "
            "paths; symlinks are followed and must stay inside the project's folder.",
            "sensitivity": "Jobs can use it only on facilities that accept this tier.",
            "sha256": "Optional: the checksum of the dataset's archive or manifest.",
        }

    def _post_clean(self) -> None:
        pass  # the service validates (one home for the rules) and answers per field


def _project(request: HttpRequest, pk: int) -> Project:
    project = get_object_or_404(Project, pk=pk)
    if not selectors.can_see_project(request.user, project):
        raise Http404("Not found.")
    return project


@login_required
def project_datasets(request: HttpRequest, pk: int) -> HttpResponse:
    """The list, with the form to register another (members and staff)."""
    project = _project(request, pk)
    can_manage = selectors.can_act_on_project(request.user, project)
    form = DatasetForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        dataset = form_call(
            form, services.dataset_create, by=request.user, project=project, **form.cleaned_data
        )
        if dataset is not None:
            messages.success(request, f"Dataset {dataset.name} registered.")
            return redirect("project-datasets", pk)
    datasets = selectors.visible_datasets(request.user).filter(project=project)
    return render(
        request,
        "allocations/datasets.html",
        {"project": project, "datasets": datasets, "form": form, "can_manage": can_manage},
        status=form_status(form),
    )


@login_required
def dataset_edit(request: HttpRequest, pk: int, dataset_id: int) -> HttpResponse:
    project = _project(request, pk)
    dataset = get_object_or_404(Dataset, pk=dataset_id, project=project)
    if not selectors.can_act_on_project(request.user, project):
        messages.error(request, "Only members of the project (or staff) can change its datasets.")
        return redirect("project-datasets", pk)
    form = DatasetForm(request.POST or None, instance=dataset)
    if request.method == "POST" and form.is_valid():
        saved = form_call(
            form, services.dataset_update, dataset=dataset, by=request.user, **form.cleaned_data
        )
        if saved is not None:
            messages.success(request, f"Dataset {form.cleaned_data['name']} saved.")
            return redirect("project-datasets", pk)
    return render(
        request,
        "allocations/dataset_edit.html",
        {"project": project, "dataset": dataset, "form": form},
        status=form_status(form),
    )


@login_required
@require_POST
@refused_to("project-datasets", "pk")
def dataset_delete(request: HttpRequest, pk: int, dataset_id: int) -> HttpResponse:
    project = _project(request, pk)
    dataset = get_object_or_404(Dataset, pk=dataset_id, project=project)
    services.dataset_delete(dataset=dataset, by=request.user)
    messages.success(request, f"Dataset {dataset.name} removed (its files stay where they are).")
    return redirect("project-datasets", pk)
