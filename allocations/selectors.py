"""Reads scoped to what a user may see. Objects outside the scope are simply absent (404)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from decimal import Decimal

from django.contrib.auth.models import AbstractUser, AnonymousUser
from django.contrib.contenttypes.models import ContentType
from django.db.models import Model, Q, QuerySet, Sum, Value
from django.db.models.functions import Coalesce

from .ledger import Ledger, ledger_of
from .models import (
    Allocation,
    AllocationRequest,
    Dataset,
    Event,
    Project,
    ProjectMembership,
    UsageRecord,
)

# Who is staff or a reviewer is decided in roles.py alone; these names are re-exported here.
from .roles import acts_on_all_projects, is_reviewer, is_staff, sees_all_projects  # noqa: F401

User = AbstractUser | AnonymousUser

_MEMBER_CACHE = "_member_project_ids"  # where member_project_ids keeps its answer, on the user
_ALLOCATION_CACHE = "_member_allocation_ids"  # and member_allocation_ids


def _allocation_rows() -> QuerySet[Allocation]:
    return Allocation.objects.select_related("project", "facility", "node_type")


def _events(type_id: int, object_id: int) -> QuerySet[Event]:
    return Event.objects.filter(content_type_id=type_id, object_id=object_id).select_related(
        "actor"
    )


def _visible_project_ids(user: User) -> list[int] | None:
    """The one rule of what a user sees: None for every project (reviewers and staff,
    roles.sees_all_projects), otherwise the projects they are a member of (none for an
    anonymous user)."""
    if sees_all_projects(user):
        return None
    return member_project_ids(user)


def visible_projects(user: User) -> QuerySet[Project]:
    ids = _visible_project_ids(user)
    return Project.objects.all() if ids is None else Project.objects.filter(pk__in=ids)


def membership(user: User, project: Project) -> ProjectMembership | None:
    if not user.is_authenticated:
        return None
    return ProjectMembership.objects.filter(project_id=project.pk, user_id=user.pk).first()


def can_manage_project(user: User, project: Project) -> bool:
    found = membership(user, project)
    return bool(found and found.can_manage) or bool(user.is_authenticated and user.is_superuser)


def belongs_to(user: User, project_id: int) -> bool:
    """Whether `user` is a member (any role, PI included) of the project: asked fresh, never
    from a per-request cache, because a conflict of interest must not be missed."""
    return bool(
        user is not None
        and user.is_authenticated
        and ProjectMembership.objects.filter(project_id=project_id, user_id=user.pk).exists()
    )


def is_member(user: User, project_id: int) -> bool:
    return bool(user.is_authenticated and project_id in member_project_ids(user))


def _per_request(user: User, attribute: str, ids: Callable[[int], Iterable[int]]) -> list[int]:
    """`ids(user's pk)` as a list, kept on the user object (one per request) under
    `attribute`; nothing for someone signed out."""
    if not user.is_authenticated:
        return []
    cached = getattr(user, attribute, None)
    if cached is None:
        cached = list(ids(user.pk))
        setattr(user, attribute, cached)
    return cached


def member_project_ids(user: User) -> list[int]:
    """Ids of the projects the user is a member of (one small query, cached per request)."""
    return _per_request(
        user,
        _MEMBER_CACHE,
        lambda pk: ProjectMembership.objects.filter(user_id=pk).values_list(
            "project_id", flat=True
        ),
    )


def member_allocation_ids(user: User) -> list[int]:
    """Ids of the allocations of the projects the user is a member of (one small query,
    cached per request). A list of jobs filtered by these ids walks the jobs' index without
    joining each row to its allocation: at a centre, a researcher's newest 50 jobs lie among
    thousands of others' (docs/performance.md)."""
    return _per_request(
        user,
        _ALLOCATION_CACHE,
        lambda pk: (
            Allocation.objects.filter(project__memberships__user_id=pk)
            .order_by("pk")
            .values_list("pk", flat=True)
        ),
    )


def visible_requests(user: User) -> QuerySet[AllocationRequest]:
    qs = AllocationRequest.objects.select_related(
        "project", "facility", "node_type", "requested_by", "reviewed_by", "allocation"
    )
    ids = _visible_project_ids(user)
    return qs if ids is None else qs.filter(project_id__in=ids)


def review_queue(user: User) -> QuerySet[AllocationRequest]:
    """Submitted requests, oldest first: the order reviewers should work through them."""
    if not is_reviewer(user):
        return AllocationRequest.objects.none()
    return (
        visible_requests(user)
        .filter(status=AllocationRequest.Status.SUBMITTED)
        .order_by("submitted_at", "id")
    )


def allocation_ledger(allocation_id: int) -> Ledger:
    """Granted, charged, reserved and remaining of one allocation, exact: its ledger columns
    (one query). Inside a transaction that holds the allocation row lock, this is the figure a
    launch checks."""
    return ledger_of(
        Allocation.objects.only("gpu_hours", "budget", *Allocation.LEDGER_FIELDS).get(
            pk=allocation_id
        )
    )


def visible_allocations(user: User) -> QuerySet[Allocation]:
    """The allocations `user` may see, each with its ledger (columns of the row)."""
    return visible_allocation_rows(user)


def visible_allocation_rows(user: User) -> QuerySet[Allocation]:
    """The allocations `user` may see (project, facility and node type joined)."""
    ids = _visible_project_ids(user)
    return _allocation_rows() if ids is None else _allocation_rows().filter(project_id__in=ids)


def visible_allocation(user: User, pk: int) -> Allocation | None:
    """One allocation of `visible_allocation_rows` (project, facility and node type joined), or
    None: the allocation page's read."""
    ids = _visible_project_ids(user)
    if ids == []:
        return None
    try:  # get(), not first(): no ORDER BY (the model's ordering) to compile for a primary key
        allocation = _allocation_rows().get(pk=pk)
    except Allocation.DoesNotExist:
        return None
    if ids is not None and allocation.project_id not in ids:
        return None
    return allocation


def allocation_usage_totals(allocation_id: int) -> dict[str, Decimal]:
    totals = UsageRecord.objects.filter(allocation_id=allocation_id).aggregate(
        gpu_seconds=Coalesce(Sum("gpu_seconds"), Value(0)),
        cost=Coalesce(Sum("cost"), Value(Decimal("0"))),
    )
    return {"gpu_hours": Decimal(totals["gpu_seconds"]) / 3600, "cost": totals["cost"]}


def timeline(obj: Model) -> QuerySet[Event]:
    """The audit events of one object, oldest first."""
    return _events(ContentType.objects.get_for_model(type(obj)).pk, obj.pk)


def timeline_events(obj: Model) -> list[Event]:
    """`timeline(obj)`, evaluated."""
    return list(timeline(obj))


# Project datasets: members and staff act, reviewers and staff see (the launcher's rule).
def can_see_project(user: User, project: Project) -> bool:
    if user is None or not user.is_authenticated:
        return False
    return sees_all_projects(user) or project.pk in member_project_ids(user)


def can_act_on_project(user: User, project: Project) -> bool:
    if user is None or not user.is_authenticated:
        return False
    return acts_on_all_projects(user) or project.pk in member_project_ids(user)


def seen_projects(user: User) -> QuerySet[Project]:
    """Projects whose work and datasets the user sees (members; reviewers and staff: all)."""
    if not user.is_authenticated:
        return Project.objects.none()
    if sees_all_projects(user):
        return Project.objects.all()
    return Project.objects.filter(pk__in=member_project_ids(user))


def visible_datasets(user: User) -> QuerySet[Dataset]:
    """Datasets of the user's projects (reviewers and staff: all), with their project."""
    qs = Dataset.objects.select_related("project", "created_by")
    if not user.is_authenticated:
        return qs.none()
    if sees_all_projects(user):
        return qs
    return qs.filter(project_id__in=member_project_ids(user))


def project_history(project: Project, limit: int = 40) -> list[Event]:
    """The project's whole story, newest first: its own events (members added, removed, their
    roles), its requests' (submitted, decided, with the reviewer's comment) and its allocations'
    (provisioned, active, suspended, closed). Each event carries `about` ("Request #5") and
    `about_url` for the page. One query."""
    types = ContentType.objects.get_for_models(Project, AllocationRequest, Allocation)
    requests = AllocationRequest.objects.filter(project=project).values("pk")
    allocations = Allocation.objects.filter(project=project).values("pk")
    events = list(
        Event.objects.filter(
            Q(content_type=types[Project], object_id=project.pk)
            | Q(content_type=types[AllocationRequest], object_id__in=requests)
            | Q(content_type=types[Allocation], object_id__in=allocations)
        )
        .select_related("actor")
        .order_by("-created_at", "-pk")[:limit]
    )
    for event in events:
        if event.content_type_id == types[AllocationRequest].pk:
            event.about, event.about_url = (
                f"Request #{event.object_id}",
                f"/requests/{event.object_id}/",
            )
        elif event.content_type_id == types[Allocation].pk:
            event.about, event.about_url = (
                f"Allocation #{event.object_id}",
                f"/allocations/{event.object_id}/",
            )
        else:
            event.about, event.about_url = "Project", ""
    return events
