"""`datasets/`: a project's registered datasets. List and create for anyone who may see /
act on the project; detail for those who see it; update and delete for members (and staff).
Thin: the services check permissions, rules and uniqueness, and audit."""

from __future__ import annotations

from typing import Any, cast

import django_filters
from django.contrib.auth.models import AnonymousUser
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status, viewsets
from rest_framework.response import Response

from core import strict
from core.filters import IdFilter

from .. import selectors, services
from ..models import Dataset, Sensitivity


class DatasetOut(strict.ModelSerializer):
    project_code = strict.CharField(source="project.code", read_only=True)
    created_by = strict.CharField(
        source="created_by.username", default=None, read_only=True, allow_null=True
    )

    class Meta:
        model = Dataset
        fields = [
            "id",
            "project",
            "project_code",
            "name",
            "location",
            "modality",
            "sensitivity",
            "sha256",
            "created_by",
            "created_at",
            "updated_at",
        ]


class DatasetIn(serializers.Serializer):
    """Types only; the rules (relative location without '..', unique name, tiers) are the
    service's, answered per field."""

    project = strict.PrimaryKeyRelatedField(queryset=Dataset.objects.none())
    name = strict.CharField(max_length=80)
    location = strict.CharField(max_length=250, trim_whitespace=True)
    modality = serializers.ChoiceField(choices=Dataset.Modality.choices)
    sensitivity = serializers.ChoiceField(choices=Sensitivity.choices)
    sha256 = strict.CharField(max_length=64, required=False, allow_blank=True, default="")

    def __init__(self, *args: Any, user: selectors.User | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        project = cast(strict.PrimaryKeyRelatedField, self.fields["project"])
        # drf-stubs give RelatedField.queryset a Manager type, whose __get__ mypy then applies.
        project.queryset = selectors.seen_projects(user or AnonymousUser())  # type: ignore[arg-type]


class DatasetFilter(django_filters.FilterSet):
    # An id the caller cannot see filters to nothing (like one that does not exist), not a 400.
    project = IdFilter(field_name="project_id", label="Only this project's datasets")

    class Meta:
        model = Dataset
        fields = ["project"]


class DatasetViewSet(viewsets.ModelViewSet):
    """datasets/ (list, `?project=<id>`; POST registers), datasets/{id}/ (GET, PATCH, PUT,
    DELETE)."""

    serializer_class = DatasetOut
    filterset_class = DatasetFilter

    def get_queryset(self):
        return selectors.visible_datasets(self.request.user)

    def _input(self, partial: bool = False) -> dict:
        data = DatasetIn(data=self.request.data, partial=partial, user=self.request.user)
        data.is_valid(raise_exception=True)
        return dict(data.validated_data)

    @extend_schema(request=DatasetIn, responses={201: DatasetOut})
    def create(self, request, *args, **kwargs):
        data = self._input()
        dataset = services.dataset_create(by=request.user, **data)
        return Response(DatasetOut(dataset).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=DatasetIn, responses=DatasetOut)
    def update(self, request, *args, **kwargs):
        dataset = self.get_object()
        data = self._input(partial=kwargs.get("partial", False))
        if "project" in data and data.pop("project") != dataset.project:
            raise services.PolicyError("A dataset cannot move to another project.", "project")
        if not kwargs.get("partial"):
            data.setdefault("sha256", "")
        dataset = services.dataset_update(dataset=dataset, by=request.user, **data)
        return Response(DatasetOut(dataset).data)

    def destroy(self, request, *args, **kwargs):
        services.dataset_delete(dataset=self.get_object(), by=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)
