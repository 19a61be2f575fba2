"""REST API views: parse, call a service, shape the answer. No business rules here."""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, cast

from django.contrib.auth import get_user_model
from django.db.models import Sum
from django.db.models.functions import TruncDate
from django.http import Http404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from .. import selectors, services
from ..models import Facility, UsageRecord
from . import serializers as s
from .filters import AllocationFilter, RequestFilter

if TYPE_CHECKING:
    from django.contrib.auth.models import User as AuthUser


class FacilityViewSet(viewsets.ReadOnlyModelViewSet):
    """The catalogue: facilities with their policy and node types."""

    serializer_class = s.FacilitySerializer
    lookup_field = "slug"
    queryset = Facility.objects.filter(is_active=True).prefetch_related("node_types")


MEMBER_ERRORS = {
    400: OpenApiResponse(description='Per-field messages, e.g. `{"username": [...]}`.'),
    403: OpenApiResponse(description="Only the project's PI or a manager (a PI for PIs)."),
    404: OpenApiResponse(description="No such project for you, or no such member."),
    409: OpenApiResponse(description="The project would be left without a PI."),
}


class ProjectViewSet(
    mixins.CreateModelMixin, mixins.UpdateModelMixin, viewsets.ReadOnlyModelViewSet
):
    serializer_class = s.ProjectSerializer

    def get_queryset(self):
        return (
            selectors.visible_projects(self.request.user)
            .select_related("pi")
            .prefetch_related("memberships__user")
        )

    def perform_create(self, serializer):
        data = serializer.validated_data
        by = cast("AuthUser", self.request.user)  # IsAuthenticated (the API's default)
        serializer.instance = services.project_create(by=by, **data)

    def perform_update(self, serializer):
        # Through the service (permission, audit event), never serializer.save().
        serializer.instance = services.project_update(
            project=serializer.instance, by=self.request.user, **serializer.validated_data
        )

    @extend_schema(
        request=s.MemberInputSerializer,
        responses={200: s.ProjectSerializer, **MEMBER_ERRORS},
        summary="Add a member by username or email (PI or manager)",
    )
    @action(detail=True, methods=["post"])
    def members(self, request, pk=None):
        project = self.get_object()
        data = s.MemberInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        user = services.user_find(identifier=data.validated_data["username"])
        services.project_member_add(
            project=project,
            by=request.user,
            user=user,
            role=data.validated_data["role"],
            cluster_username=data.validated_data["cluster_username"],
        )
        return self._project(project)

    @extend_schema(
        methods=["patch"],
        request=s.MemberRoleSerializer,
        responses={200: s.ProjectSerializer, **MEMBER_ERRORS},
        summary="Change a member's role (409 for the last PI stepping down)",
    )
    @extend_schema(
        methods=["delete"],
        request=None,
        responses={204: None, **MEMBER_ERRORS},
        summary="Remove a member (409 for the last PI)",
    )
    @action(
        detail=True,
        methods=["patch", "delete"],
        url_path=r"members/(?P<username>[^/]+)",
        url_name="member",
    )
    def member(self, request, pk=None, username=None):
        project = self.get_object()
        user = get_user_model().objects.filter(username=username).first()
        if user is None or not project.memberships.filter(user=user).exists():
            raise Http404
        if request.method == "DELETE":
            services.project_member_remove(project=project, by=request.user, user=user)
            return Response(status=status.HTTP_204_NO_CONTENT)
        data = s.MemberRoleSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        services.project_member_role_change(
            project=project, by=request.user, user=user, role=data.validated_data["role"]
        )
        return self._project(project)

    def _project(self, project):
        return Response(s.ProjectSerializer(self.get_queryset().get(pk=project.pk)).data)


class RequestViewSet(viewsets.ModelViewSet):
    """Allocation requests and their workflow moves."""

    filterset_class = RequestFilter
    http_method_names = ["get", "post", "put", "patch", "head", "options"]

    def get_queryset(self):
        return selectors.visible_requests(self.request.user)

    def get_serializer_class(self):
        return s.RequestOutputSerializer

    def _input(self, instance=None, partial=False):
        data = s.RequestInputSerializer(
            instance=instance, data=self.request.data, partial=partial, user=self.request.user
        )
        data.is_valid(raise_exception=True)
        return dict(data.validated_data)

    @extend_schema(request=s.RequestInputSerializer, responses={201: s.RequestOutputSerializer})
    def create(self, request, *args, **kwargs):
        data = self._input()
        submit = data.pop("submit", False)
        project = data.pop("project")
        req = services.request_create(by=request.user, project=project, submit=submit, **data)
        return self._out(req, status.HTTP_201_CREATED)

    @extend_schema(request=s.RequestInputSerializer, responses=s.RequestOutputSerializer)
    def update(self, request, *args, **kwargs):
        req = self.get_object()
        data = self._input(instance=req, partial=kwargs.get("partial", False))
        data.pop("submit", None)
        if "project" in data and data.pop("project") != req.project:
            raise services.PolicyError("A request cannot move to another project.", "project")
        req = services.request_update(request=req, by=request.user, **data)
        return self._out(req)

    @extend_schema(request=s.RequestInputSerializer, responses=s.RequestOutputSerializer)
    def partial_update(self, request, *args, **kwargs):
        return self.update(request, *args, partial=True, **kwargs)

    def _out(self, req, code=status.HTTP_200_OK):
        fresh = self.get_queryset().get(pk=req.pk)
        return Response(s.RequestOutputSerializer(fresh).data, status=code)

    @extend_schema(request=None, responses=s.RequestOutputSerializer)
    @action(detail=True, methods=["post"])
    def submit(self, request, pk=None):
        return self._out(services.request_submit(request=self.get_object(), by=request.user))

    @extend_schema(request=s.CommentSerializer, responses=s.RequestOutputSerializer)
    @action(detail=True, methods=["post"])
    def withdraw(self, request, pk=None):
        comment = self._comment()
        return self._out(
            services.request_withdraw(request=self.get_object(), by=request.user, comment=comment)
        )

    @extend_schema(request=s.ApproveSerializer, responses=s.RequestOutputSerializer)
    @action(detail=True, methods=["post"])
    def approve(self, request, pk=None):
        data = s.ApproveSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        req = self.get_object()
        services.request_approve(
            request=req,
            by=request.user,
            gpu_hours=data.validated_data.get("gpu_hours"),
            comment=data.validated_data["comment"],
        )
        return self._out(req)

    @extend_schema(request=s.CommentSerializer, responses=s.RequestOutputSerializer)
    @action(detail=True, methods=["post"])
    def reject(self, request, pk=None):
        comment = self._comment()
        return self._out(
            services.request_reject(request=self.get_object(), by=request.user, comment=comment)
        )

    @extend_schema(request=s.CommentSerializer, responses=s.RequestOutputSerializer)
    @action(detail=True, methods=["post"], url_path="request-changes")
    def request_changes(self, request, pk=None):
        comment = self._comment()
        return self._out(
            services.request_request_changes(
                request=self.get_object(), by=request.user, comment=comment
            )
        )

    def _comment(self) -> str:
        data = s.CommentSerializer(data=self.request.data)
        data.is_valid(raise_exception=True)
        return data.validated_data["comment"]


class AllocationViewSet(viewsets.ReadOnlyModelViewSet):
    """Granted allocations with used and remaining GPU-hours and spend."""

    serializer_class = s.AllocationSerializer
    filterset_class = AllocationFilter

    def get_queryset(self):
        # The ledger is columns of the row (allocations/ledger.py): nothing to annotate. The
        # facilities' node types say each one's unit (`unit`), one query for the page.
        return selectors.visible_allocation_rows(self.request.user).prefetch_related(
            "facility__node_types"
        )

    @extend_schema(responses={200: s.UsageSeriesSerializer})
    @action(detail=True, methods=["get"])
    def usage(self, request, pk=None):
        allocation = self.get_object()
        rows = (
            UsageRecord.objects.filter(allocation=allocation)
            .annotate(day=TruncDate("period_start"))
            .values("day")
            .annotate(gpu_seconds=Sum("gpu_seconds"), cost=Sum("cost"))
            .order_by("day")
        )
        series = [
            {
                "date": row["day"],
                "gpu_hours": Decimal(row["gpu_seconds"]) / 3600,
                "cost": row["cost"],
            }
            for row in rows
        ]
        return Response(
            s.UsageSeriesSerializer({"allocation": allocation.pk, "daily": series}).data
        )
