import django_filters

from core.filters import IdFilter

from ..models import Allocation, AllocationRequest


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
