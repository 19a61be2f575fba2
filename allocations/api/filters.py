import django_filters

from ..models import Allocation, AllocationRequest


class RequestFilter(django_filters.FilterSet):
    facility = django_filters.CharFilter(field_name="facility__slug")

    class Meta:
        model = AllocationRequest
        fields = ["status", "kind", "purpose", "project", "facility"]


class AllocationFilter(django_filters.FilterSet):
    facility = django_filters.CharFilter(field_name="facility__slug")

    class Meta:
        model = Allocation
        fields = ["status", "kind", "project", "facility"]
