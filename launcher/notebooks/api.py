"""Notebook sessions on the API: `notebooks/` (list; POST {allocation, gpus, hours} opens
one), `notebooks/{id}/`, `notebooks/{id}/stop/`. Thin: the services decide (404 for others'
allocations and sessions, 400 per field, 409 for what the allocation or the state refuses)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import django_filters
from django.conf import settings
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from core import strict
from core.filters import IdFilter

from ..api.idempotent import IDEMPOTENCY_KEY, created, idempotency_of
from ..idempotency import launch_once
from . import figures, selectors, services
from .models import NotebookSession

_CONFLICT = OpenApiResponse(
    description="Not allowed now: the allocation is not active, its "
    "facility cannot run notebooks, gpus x hours does not fit what is "
    "left (the body carries the numbers and the shortfall), the "
    "session has already stopped, or (opening) the Idempotency-Key "
    "was used for another request."
)
_BAD = OpenApiResponse(description="Per-field messages (allocation, gpus, hours).")
_NOT_FOUND = OpenApiResponse(description="Not there for you (never says whether it exists).")


class NotebookInput(serializers.Serializer):
    allocation = strict.IntegerField(min_value=1, help_text="An allocation of your project.")
    gpus = strict.IntegerField(
        min_value=0, max_value=64, help_text="GPUs, within one node of the allocation's node type."
    )
    hours = serializers.DecimalField(
        max_digits=6,
        decimal_places=2,
        min_value=Decimal("0.01"),
        max_value=Decimal(str(settings.NOTEBOOK_MAX_HOURS)),
        coerce_to_string=False,
        help_text="The wall limit: the session is stopped there; gpus x hours is reserved.",
    )


class NotebookOut(strict.ModelSerializer):
    owner = strict.CharField(source="user.username", read_only=True)
    url = serializers.SerializerMethodField(help_text="JupyterLab; only for its owner (else null).")
    hours = serializers.DecimalField(
        max_digits=6, decimal_places=2, coerce_to_string=False, read_only=True
    )
    reserved_gpu_seconds = serializers.SerializerMethodField(
        help_text="GPU-seconds it holds on the ledger now (0 once charged or failed)."
    )
    gpu_seconds = strict.IntegerField(
        read_only=True, help_text="Charged, exactly (0 until its backend's record is charged)."
    )
    gpu_seconds_so_far = serializers.SerializerMethodField(
        help_text="Charged once charged; while it runs, GPUs x seconds since it started."
    )
    charged = serializers.SerializerMethodField()
    idle_for = serializers.SerializerMethodField(
        help_text="Seconds since the hub saw activity, while it runs (else null)."
    )
    idle_limit_minutes = strict.IntegerField(
        source="allocation.facility.notebook_idle_minutes", read_only=True
    )
    page = serializers.SerializerMethodField()

    class Meta:
        model = NotebookSession
        fields = [
            "id",
            "allocation",
            "owner",
            "state",
            "reason",
            "gpus",
            "hours",
            "url",
            "reserved_gpu_seconds",
            "gpu_seconds",
            "gpu_seconds_so_far",
            "wall_seconds",
            "charged",
            "created_at",
            "started_at",
            "stopped_at",
            "last_activity",
            "idle_for",
            "idle_limit_minutes",
            "page",
        ]
        read_only_fields = fields

    def get_url(self, session: NotebookSession) -> str | None:
        request = self.context.get("request")
        user = getattr(request, "user", None)
        return session.url if selectors.may_open(user, session) and not session.is_final else None

    def get_reserved_gpu_seconds(self, session: NotebookSession) -> int:
        return session.reserved_now

    def get_gpu_seconds_so_far(self, session: NotebookSession) -> int:
        return figures.gpu_seconds_so_far(session)

    def get_charged(self, session: NotebookSession) -> bool:
        return session.charged_at is not None

    def get_idle_for(self, session: NotebookSession) -> int | None:
        return figures.idle_seconds(session)

    def get_page(self, session: NotebookSession) -> str:
        return f"/notebooks/{session.pk}/"


class NotebookFilter(django_filters.FilterSet):
    allocation = IdFilter(field_name="allocation_id", label="Only this allocation's sessions")
    state = django_filters.ChoiceFilter(choices=NotebookSession.State.choices)

    class Meta:
        model = NotebookSession
        fields = ["allocation", "state"]


@extend_schema_view(
    list=extend_schema(description="Sessions on the allocations you may see, newest first."),
    retrieve=extend_schema(responses={200: NotebookOut, 404: _NOT_FOUND}),
)
class NotebookViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """notebooks/ (list; POST opens a JupyterLab session), notebooks/{id}/, notebooks/{id}/stop/."""

    serializer_class = NotebookOut
    filterset_class = NotebookFilter

    def get_queryset(self) -> Any:
        return selectors.visible_sessions(self.request.user)

    def get_object(self) -> NotebookSession:
        return selectors.session_for(self.request.user, self.kwargs.get("pk"))

    @extend_schema(
        request=NotebookInput,
        parameters=[IDEMPOTENCY_KEY],
        responses={201: NotebookOut, 400: _BAD, 404: _NOT_FOUND, 409: _CONFLICT},
        description="Open a notebook on the allocation's facility: reserves gpus x "
        "hours on its ledger and starts JupyterLab (state `starting`, "
        "then `running`; open `url`).",
    )
    def create(self, request: Any) -> Response:
        idempotency = idempotency_of(request, "notebooks")

        def launch() -> NotebookSession:
            data = NotebookInput(data=request.data)
            data.is_valid(raise_exception=True)
            v = data.validated_data
            session = services.notebook_start(
                actor=request.user,
                allocation_id=v["allocation"],
                gpus=v["gpus"],
                hours=v["hours"],
                idempotency=idempotency,
            )
            return selectors.session_for(request.user, session.pk)

        session, replayed = launch_once(
            idempotency,
            launch=launch,
            find=lambda kind, pk: selectors.session_for(request.user, pk),
        )
        return created(NotebookOut(session, context={"request": request}).data, replayed=replayed)

    @extend_schema(
        request=None,
        responses={
            200: NotebookOut,
            403: OpenApiResponse(
                description="Not yours: only its owner (or staff) stops a session."
            ),
            404: _NOT_FOUND,
            409: _CONFLICT,
        },
    )
    @action(detail=True, methods=["post"])
    def stop(self, request: Any, pk: Any = None) -> Response:
        """Stop the session (its owner or staff); it is charged what its backend recorded."""
        session = services.notebook_stop(actor=request.user, session_id=pk)
        session = selectors.session_for(request.user, session.pk)
        return Response(NotebookOut(session, context={"request": request}).data)
