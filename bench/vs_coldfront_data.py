"""The data each side of `bench_vs_coldfront.py` is loaded with, as scripts run by each side's
own `manage.py shell -c` (so each is created through its own ORM, models and defaults).

Three scales:
- demo: each side's own demo data. ColdFront: `load_test_data` (PI cgray). Ours: `seed_demo`
  plus two projects led by the demo PI, each with an approved trial (an active allocation with a
  few usage records) and a submitted full request.
- large and centre: the same shape on both sides on top of the demo data (SHAPES): per project
  10 allocations, 50 requests and 50 usage rows an allocation, the benchmark PI leading 10
  projects (as on a busy PI's page), other PIs about 10 each (20 at large, 300 at centre). large:
  200 projects, 2,000 allocations, 10,000 requests, 100,000 usage rows. centre: 3,000 projects
  (a national centre's, as in bench/scale_world.py), 30,000 allocations, 150,000 requests and
  1,500,000 usage rows. ColdFront has no request object of its own: a request is an Allocation
  in status "New" (so it holds 180,000 allocations at centre scale), and usage history is the
  simple-history table of AllocationAttributeUsage; those are what its pages read.

Each script prints one line `IDS {json}` with the objects the benchmark opens.
"""

from __future__ import annotations

PER_PROJECT = {
    "pi_projects": 10,  # led by the benchmark PI, the rest by other PIs (about 10 each)
    "allocations_per_project": 10,
    "requests_per_project": 50,
    "usage_per_allocation": 50,
}
SHAPES = {
    "large": {"projects": 200, "other_pis": 20, **PER_PROJECT},
    "centre": {"projects": 3000, "other_pis": 300, **PER_PROJECT},
}
# The loaders build and write the big tables this many rows at a time, so a centre's 1,500,000
# usage rows never sit in memory at once; each bulk_create is one transaction.
CHUNK = 20000

OURS_DEMO = r"""
import datetime as dt, json
from decimal import Decimal
from django.contrib.auth import get_user_model
from django.utils import timezone
from allocations.models import *
pi = get_user_model().objects.get(username="pi")
local = Facility.objects.get(slug="local")
today = timezone.localdate()
now = timezone.now()
words = ("We train DenseNet and ResNet classifiers on chest CT and X-ray images to detect "
         "COVID-19, sweeping learning rates and folds, then compare sensitivity, specificity "
         "and calibration across hospitals.")
ids = {}
for n in (1, 2):
    project, _ = Project.objects.get_or_create(code=f"DEMO-PI-{n:03d}", defaults=dict(
        title=f"Chest imaging {n}", research_area="Health", pi=pi, pi_name="Pat PI",
        pi_email="pi@example.org"))
    ProjectMembership.objects.get_or_create(project=project, user=pi, defaults={"role": "pi"})
    alloc = Allocation.objects.filter(project=project).first()
    if alloc is None:
        alloc = Allocation.objects.create(project=project, facility=local, kind="trial",
            gpu_hours=Decimal(400), start_date=today - dt.timedelta(days=20),
            end_date=today + dt.timedelta(days=70), status="active", account_name=f"demo-{n}")
        AllocationRequest.objects.create(project=project, facility=local, kind="trial",
            gpu_hours=400, start_date=alloc.start_date, end_date=alloc.end_date,
            justification=words, status="approved", requested_by=pi, allocation=alloc,
            submitted_at=now)
        UsageRecord.objects.bulk_create([UsageRecord(allocation=alloc, source="local",
            external_id=f"demo-{n}-{j}", period_start=now - dt.timedelta(days=j),
            period_end=now - dt.timedelta(days=j) + dt.timedelta(hours=2),
            gpu_seconds=7200) for j in range(5)])
        AllocationRequest.objects.create(project=project, facility=Facility.objects.get(
            slug="jade2"), kind="full", gpu_hours=2000, start_date=today,
            end_date=today + dt.timedelta(days=90), justification=words, status="submitted",
            requested_by=pi, submitted_at=now)
    ids.setdefault("allocation", alloc.pk)
    ids.setdefault("project", project.pk)
ids["request"] = AllocationRequest.objects.filter(project__pi=pi, status="submitted").first().pk
from allocations.ledger import ledger_rebuild
ledger_rebuild()  # the ledger columns of rows loaded around the services
print("IDS " + json.dumps(ids))
"""

OURS_LARGE = r"""
import datetime as dt, json
from decimal import Decimal
from django.contrib.auth import get_user_model
from django.utils import timezone
from allocations.models import *
S = SHAPE
User = get_user_model()
pi = User.objects.get(username="pi")
others = [User.objects.get_or_create(username=f"bench-pi-{i}", defaults={
    "email": f"bench-pi-{i}@example.org"})[0] for i in range(S["other_pis"])]
facilities = list(Facility.objects.all())
today, now = timezone.localdate(), timezone.now()
words = ("We train DenseNet and ResNet classifiers on chest CT and X-ray images to detect "
         "COVID-19, sweeping learning rates and folds, then compare sensitivity, specificity "
         "and calibration across hospitals.")
def write(model, rows):
    batch = []
    for row in rows:
        batch.append(row)
        if len(batch) == CHUNK:
            model.objects.bulk_create(batch)
            batch = []
    model.objects.bulk_create(batch)
projects = Project.objects.bulk_create([Project(code=f"BIG-{i:04d}", title=f"Project {i}",
    research_area="AI", pi=pi if i < S["pi_projects"] else others[i % S["other_pis"]],
    pi_name="P I", pi_email="pi@example.org") for i in range(S["projects"])])
ProjectMembership.objects.bulk_create([ProjectMembership(project=p, user=p.pi, role="pi")
                                       for p in projects])
allocs = Allocation.objects.bulk_create([Allocation(project=p,
    facility=facilities[(i + j) % len(facilities)], kind="full", gpu_hours=Decimal(5000),
    start_date=today - dt.timedelta(days=60), end_date=today + dt.timedelta(days=120),
    status="active", account_name=f"big-{i}-{j}")
    for i, p in enumerate(projects) for j in range(S["allocations_per_project"])])
statuses = ["draft", "submitted", "approved", "rejected", "changes_requested", "withdrawn"]
write(AllocationRequest, (AllocationRequest(project=p,
    facility=facilities[(i + j) % len(facilities)], kind="full", gpu_hours=100 + j,
    start_date=today, end_date=today + dt.timedelta(days=90), justification=words,
    status=statuses[j % 6], requested_by=p.pi, submitted_at=now)
    for i, p in enumerate(projects) for j in range(S["requests_per_project"])))
write(UsageRecord, (UsageRecord(allocation=a, source="slurm",
    external_id=f"big-{a.pk}-{k}", period_start=now - dt.timedelta(hours=20 * k),
    period_end=now - dt.timedelta(hours=20 * k - 1), gpu_seconds=3600 * (1 + k % 4))
    for a in allocs for k in range(S["usage_per_allocation"])))
mine = [a for a in allocs if a.project.pi_id == pi.pk]
ids = {"allocation": mine[0].pk, "project": projects[0].pk,
       "request": AllocationRequest.objects.filter(project=projects[0], status="submitted")
       .first().pk}
from allocations.ledger import ledger_rebuild
ledger_rebuild()  # the ledger columns of rows loaded around the services
print("IDS " + json.dumps(ids))
"""

CF_DEMO = r"""
import json
from django.contrib.auth import get_user_model
from coldfront.core.allocation.models import Allocation, AllocationStatusChoice
from coldfront.core.project.models import Project
from coldfront.core.resource.models import Resource
cgray = get_user_model().objects.get(username="cgray")
project = Project.objects.filter(pi=cgray).order_by("pk").first()
project.force_review = False
project.save()
active = Allocation.objects.filter(project=project, status__name="Active").order_by("pk").first()
new = Allocation.objects.filter(status__name="New").order_by("pk").first()
if new is None:
    new = Allocation.objects.create(
        project=project, status=AllocationStatusChoice.objects.get(name="New"),
        justification="I need more nodes.", quantity=1)
    new.resources.add(active.resources.first())
resource = active.resources.first()
print("IDS " + json.dumps({"allocation": active.pk, "request": new.pk, "project": project.pk,
                           "resource": resource.pk}))
"""

CF_LARGE = r"""
import datetime as dt, json
from django.contrib.auth import get_user_model
from django.utils import timezone
from coldfront.core.allocation.models import *
from coldfront.core.field_of_science.models import FieldOfScience
from coldfront.core.project.models import *
from coldfront.core.resource.models import Resource
S = SHAPE
User = get_user_model()
cgray = User.objects.get(username="cgray")
others = [User.objects.get_or_create(username=f"bench-pi-{i}", defaults={
    "email": f"bench-pi-{i}@example.org"})[0] for i in range(S["other_pis"])]
fos = FieldOfScience.objects.first()
active_p = ProjectStatusChoice.objects.get(name="Active")
manager = ProjectUserRoleChoice.objects.get(name="Manager")
pu_active = ProjectUserStatusChoice.objects.get(name="Active")
a_active = AllocationStatusChoice.objects.get(name="Active")
a_new = AllocationStatusChoice.objects.get(name="New")
au_active = AllocationUserStatusChoice.objects.get(name="Active")
usage_type = AllocationAttributeType.objects.filter(has_usage=True).order_by("pk").first()
resources = list(Resource.objects.filter(is_allocatable=True)) or list(Resource.objects.all())
today, now = timezone.localdate(), timezone.now()
def write(model, rows, keep=False):
    batch, written = [], []
    for row in rows:
        batch.append(row)
        if len(batch) == CHUNK:
            model.objects.bulk_create(batch)
            written += batch if keep else []
            batch = []
    model.objects.bulk_create(batch)
    return written + batch if keep else None
projects = Project.objects.bulk_create([Project(title=f"Project {i}", description="Bench " * 20,
    pi=cgray if i < S["pi_projects"] else others[i % S["other_pis"]], field_of_science=fos,
    status=active_p, force_review=False) for i in range(S["projects"])])
ProjectUser.objects.bulk_create([ProjectUser(project=p, user=p.pi, role=manager,
                                             status=pu_active) for p in projects])
def allocations(status, per, justification):
    rows = write(Allocation, keep=True, rows=(Allocation(project=p, status=status, quantity=1,
        start_date=today - dt.timedelta(days=60), end_date=today + dt.timedelta(days=120),
        justification=justification, is_changeable=True) for p in projects for _ in range(per)))
    through = Allocation.resources.through
    write(through, (through(allocation_id=a.pk, resource_id=resources[k % len(resources)].pk)
                    for k, a in enumerate(rows)))
    write(AllocationUser, (AllocationUser(allocation=a, user=a.project.pi, status=au_active)
                           for a in rows))
    return rows
granted = allocations(a_active, S["allocations_per_project"], "I need access to my nodes.")
allocations(a_new, S["requests_per_project"], "I need more nodes for my project.")
attrs = write(AllocationAttribute, keep=True, rows=(AllocationAttribute(
    allocation_attribute_type=usage_type, allocation=a, value="5000") for a in granted))
write(AllocationAttributeUsage, (AllocationAttributeUsage(allocation_attribute=attr,
    value=float(S["usage_per_allocation"])) for attr in attrs))
History = AllocationAttributeUsage.history.model
write(History, (History(allocation_attribute_id=attr.pk, value=float(k), created=now,
    modified=now, history_date=now - dt.timedelta(hours=20 * k), history_type="~")
    for attr in attrs for k in range(S["usage_per_allocation"])))
mine = Allocation.objects.filter(project__pi=cgray, status=a_active,
                                 project__title__startswith="Project ").order_by("pk").first()
print("IDS " + json.dumps({"allocation": mine.pk, "project": mine.project_id,
    "request": Allocation.objects.filter(project=mine.project, status=a_new).first().pk,
    "resource": mine.resources.first().pk}))
"""


def script(template: str, scale: str) -> str:
    """A loader script with the scale's shape inlined (the shells share no Python with this
    process)."""
    return f"SHAPE = {SHAPES[scale]!r}\nCHUNK = {CHUNK}\n" + template
