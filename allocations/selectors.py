"""Reads scoped to what a user may see. Objects outside the scope are simply absent (404)."""
from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, Group
from django.contrib.contenttypes.models import ContentType
from django.db.models import (
    DecimalField, ExpressionWrapper, F, OuterRef, Q, QuerySet, Subquery, Sum, Value,
)
from django.db.models.functions import Coalesce

from .ledger import MONEY, SECONDS, Ledger, ledger_of, reserved_expressions
from .models import (
    Allocation, AllocationRequest, Dataset, Event, Project, ProjectMembership, UsageRecord,
)
from .prepared import Statement

User = AbstractBaseUser | AnonymousUser

# Asked on every page (navigation, scoping): compiled once (prepared.py).
REVIEWER_GROUP = Statement(
    lambda p: Group.objects.filter(user__id=p.value("user"), name=settings.PORTAL_REVIEWERS_GROUP)
    .values_list("pk", flat=True)[:1], key=lambda: settings.PORTAL_REVIEWERS_GROUP)
MEMBER_PROJECTS = Statement(lambda p: ProjectMembership.objects.filter(user_id=p.value("user"))
                            .values_list("project_id", flat=True))
MEMBERSHIP = Statement(lambda p: ProjectMembership.objects.filter(
    project_id=p.value("project"), user_id=p.value("user"))[:1])


def _allocation_rows() -> QuerySet[Allocation]:
    return Allocation.objects.select_related("project", "facility", "node_type")


def _events(type_id, object_id) -> QuerySet[Event]:
    return Event.objects.filter(content_type_id=type_id, object_id=object_id).select_related("actor")


ALLOCATION = Statement(lambda p: _allocation_rows().filter(pk=p.value("pk")))
EVENTS = Statement(lambda p: _events(p.value("type"), p.value("object")))


def is_reviewer(user: User) -> bool:
    """Reviewers see every request and allocation and may decide on requests."""
    if not user.is_authenticated:
        return False
    if user.is_superuser:
        return True
    cached = getattr(user, "_is_reviewer", None)
    if cached is None:
        cached = bool(REVIEWER_GROUP.run(user=user.pk))
        user._is_reviewer = cached
    return cached


def _visible_project_ids(user: User) -> list[int] | None:
    """The one rule of what a user sees: None for every project (reviewers), otherwise the
    projects they are a member of (none for an anonymous user)."""
    if user.is_authenticated and is_reviewer(user):
        return None
    return member_project_ids(user)


def visible_projects(user: User) -> QuerySet[Project]:
    ids = _visible_project_ids(user)
    return Project.objects.all() if ids is None else Project.objects.filter(pk__in=ids)


def membership(user: User, project: Project) -> ProjectMembership | None:
    if not user.is_authenticated:
        return None
    return MEMBERSHIP.first(project=project.pk, user=user.pk)


def can_manage_project(user: User, project: Project) -> bool:
    found = membership(user, project)
    return bool(found and found.can_manage) or bool(user.is_authenticated and user.is_superuser)


def _member_filter(user: User, prefix: str = "") -> Q:
    return Q(**{f"{prefix}project__memberships__user": user})


def is_member(user: User, project_id: int) -> bool:
    return bool(user.is_authenticated and project_id in member_project_ids(user))


def member_project_ids(user: User) -> list[int]:
    """Ids of the projects the user is a member of (one small query, cached per request)."""
    if not user.is_authenticated:
        return []
    cached = getattr(user, "_member_project_ids", None)
    if cached is None:
        cached = MEMBER_PROJECTS.run(user=user.pk)
        user._member_project_ids = cached
    return cached


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
    return visible_requests(user).filter(status=AllocationRequest.Status.SUBMITTED).order_by(
        "submitted_at", "id"
    )


def _usage_sum(field: str) -> Subquery:
    totals = (
        UsageRecord.objects.filter(allocation=OuterRef("pk"))
        .order_by()
        .values("allocation")
        .annotate(total=Sum(field))
        .values("total")
    )
    return Subquery(totals)


def with_usage(qs: QuerySet[Allocation]) -> QuerySet[Allocation]:
    """Annotate the ledger by SQL aggregation (one query for any number of rows): charged
    GPU-seconds (an integer) and spend, outstanding reservations of unfinished work (see
    allocations/ledger.py), and used GPU-hours derived from the seconds, unrounded."""
    reserved = reserved_expressions()
    return qs.annotate(
        gpu_seconds_used=Coalesce(_usage_sum("gpu_seconds"), Value(0)),
        spend=Coalesce(_usage_sum("cost"), Value(Decimal("0")), output_field=MONEY),
        gpu_seconds_reserved=Coalesce(reserved["gpu_seconds"], Value(Decimal(0)),
                                      output_field=SECONDS),
        cost_reserved=Coalesce(reserved["cost"], Value(Decimal(0)), output_field=MONEY),
    ).annotate(
        gpu_hours_used=ExpressionWrapper(
            # x 1.0 first: SQLite (`make run`) divides two integers as integers, and every
            # allocation under an hour read "0.00 used" on the project page.
            F("gpu_seconds_used") * Value(Decimal("1.0")) / Value(Decimal("3600")),
            output_field=DecimalField(max_digits=24, decimal_places=10),
        )
    )


def allocation_ledger(allocation_id: int) -> Ledger:
    """Granted, charged, reserved and remaining of one allocation, exact (one query). Inside
    a transaction that holds the allocation row lock, this is the figure a launch checks."""
    return ledger_of(with_usage(Allocation.objects.filter(pk=allocation_id)).get())


def visible_allocations(user: User) -> QuerySet[Allocation]:
    """The allocations `user` may see, annotated with the ledger (`with_usage`)."""
    return with_usage(visible_allocation_rows(user))


def visible_allocation_rows(user: User) -> QuerySet[Allocation]:
    """The same rows without the ledger, for a page that attaches the figures of the rows it
    shows (`ledger_query.attach_ledger`) or only needs to know what `user` may see."""
    ids = _visible_project_ids(user)
    return _allocation_rows() if ids is None else _allocation_rows().filter(project_id__in=ids)


def visible_allocation(user: User, pk: int) -> Allocation | None:
    """One allocation of `visible_allocation_rows` (project, facility and node type joined), or
    None: the allocation page's read, from a statement compiled once."""
    ids = _visible_project_ids(user)
    if ids == []:
        return None
    allocation = ALLOCATION.first(pk=pk)
    if allocation is None or (ids is not None and allocation.project_id not in ids):
        return None
    return allocation


def allocation_usage_totals(allocation_id: int) -> dict[str, Decimal]:
    totals = UsageRecord.objects.filter(allocation_id=allocation_id).aggregate(
        gpu_seconds=Coalesce(Sum("gpu_seconds"), Value(0)),
        cost=Coalesce(Sum("cost"), Value(Decimal("0"))),
    )
    return {"gpu_hours": Decimal(totals["gpu_seconds"]) / 3600, "cost": totals["cost"]}


def timeline(obj) -> QuerySet[Event]:
    """The audit events of one object, oldest first."""
    return _events(ContentType.objects.get_for_model(type(obj)).pk, obj.pk)


def timeline_events(obj) -> list[Event]:
    """`timeline(obj)`, evaluated, from a statement compiled once."""
    return EVENTS.run(type=ContentType.objects.get_for_model(type(obj)).pk, object=obj.pk)


# Project datasets: members and staff act, reviewers and staff see (the launcher's rule).
def sees_all_projects(user: User) -> bool:
    return bool(user.is_authenticated and (user.is_staff or is_reviewer(user)))


def acts_on_all_projects(user: User) -> bool:
    return bool(user.is_authenticated and (user.is_staff or user.is_superuser))


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
    events = list(Event.objects.filter(
        Q(content_type=types[Project], object_id=project.pk)
        | Q(content_type=types[AllocationRequest], object_id__in=requests)
        | Q(content_type=types[Allocation], object_id__in=allocations),
    ).select_related("actor").order_by("-created_at", "-pk")[:limit])
    for event in events:
        if event.content_type_id == types[AllocationRequest].pk:
            event.about, event.about_url = f"Request #{event.object_id}", f"/requests/{event.object_id}/"
        elif event.content_type_id == types[Allocation].pk:
            event.about, event.about_url = (f"Allocation #{event.object_id}",
                                                f"/allocations/{event.object_id}/")
        else:
            event.about, event.about_url = "Project", ""
    return events
