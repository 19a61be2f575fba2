import django_filters

from ..models import Allocation, AllocationRequest

# Ids are 64-bit; the bound is stated so the schema says it (django-filter's own is 1e50).
ID_MAX = 2**63 - 1


class RequestFilter(django_filters.FilterSet):
    facility = django_filters.CharFilter(field_name="facility__slug")
    # An id the caller cannot see filters to nothing (like one that does not exist), not a 400.
    project = django_filters.NumberFilter(field_name="project_id", max_value=ID_MAX)

    class Meta:
        model = AllocationRequest
        fields = ["status", "kind", "purpose", "project", "facility"]


class AllocationFilter(django_filters.FilterSet):
    facility = django_filters.CharFilter(field_name="facility__slug")
    project = django_filters.NumberFilter(field_name="project_id", max_value=ID_MAX)

    class Meta:
        model = Allocation
        fields = ["status", "kind", "project", "facility"]
