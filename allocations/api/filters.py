import django_filters
from django import forms
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field

from ..bounds import ID_MAX, ID_MIN
from ..models import Allocation, AllocationRequest


@extend_schema_field(OpenApiTypes.INT64)
class IdFilter(django_filters.NumberFilter):
    """An id filter: a whole number within a 64-bit id's range (`0.5`, `²` or `1e30` is a
    per-field 400 on every database, never an OverflowError on SQLite); both bounds are in the
    OpenAPI document (portal.schema reads `min_value`/`max_value`)."""

    field_class = forms.IntegerField

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("min_value", ID_MIN)
        kwargs.setdefault("max_value", ID_MAX)
        super().__init__(*args, **kwargs)


class RequestFilter(django_filters.FilterSet):
    facility = django_filters.CharFilter(field_name="facility__slug")
    # An id the caller cannot see filters to nothing (like one that does not exist), not a 400.
    project = IdFilter(field_name="project_id")

    class Meta:
        model = AllocationRequest
        fields = ["status", "kind", "purpose", "project", "facility"]


class AllocationFilter(django_filters.FilterSet):
    facility = django_filters.CharFilter(field_name="facility__slug")
    project = IdFilter(field_name="project_id")

    class Meta:
        model = Allocation
        fields = ["status", "kind", "project", "facility"]
