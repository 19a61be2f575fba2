"""Every page fits a 390 px phone (issue 22): on the demo world (`seed_demo`) with an active
allocation on `local` that has usage, a finished job with metrics, a running one, a sweep with
cells, a request waiting for review and a registered dataset, each page is loaded as the role
that uses it (researcher, PI, reviewer, admin) at 390 px and must not scroll sideways
(`document.documentElement.scrollWidth <= 390`); tables scroll inside their card. Screenshots
of each page at 390 and 1280 px go to docs/screenshots/pages/ (the ones docs/ shows)."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.utils import timezone

from allocations.models import (
    Allocation,
    AllocationRequest,
    Dataset,
    Facility,
    Project,
    UsageRecord,
)
from allocations.services import usage_record_many
from launcher.models import Job, Sweep
from launcher.notebooks.models import NotebookSession
from portal.knowledge.models import Walkthrough
from portal.onboarding.models import Flowchart
from tests.browser import login

pytestmark = pytest.mark.django_db(transaction=True)
SHOTS = Path(settings.BASE_DIR) / "docs" / "screenshots" / "pages"
PHONE, LAPTOP = 390, 1280
PASSWORD = "pw-for-tests"
METRICS = json.loads(
    (
        Path(settings.BASE_DIR) / "tests" / "launcher" / "data" / "metrics_densenet121.json"
    ).read_text()
)
GRID = {
    "models": ["densenet121"],
    "lrs": [0.001, 0.0001],
    "lr_steps": [5],
    "weight_decays": [0.0001],
    "folds": 3,
    "fixed": {"epochs": 6, "size": 64, "batch_size": 16},
}
PARAMS = {
    "model": "densenet121",
    "dataset": "synthetic-ct",
    "synthetic_n": 300,
    "size": 64,
    "epochs": 8,
    "batch_size": 16,
    "lr": 0.001,
    "seed": 0,
}
RECOMMEND = (
    "/recommend/?model=densenet121&dims=2&image_size=224&dataset_samples=100000&epochs=50"
    "&precision=bf16&gpus=1&batch_size=64&data_sensitivity=internal"
)


# The elements reaching past the viewport whose children do not: what to fix.
WIDEST = """[...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right
  > innerWidth + 1 && ![...e.children].some(c => c.getBoundingClientRect().right > innerWidth + 1))
  .slice(0, 5).map(e => e.tagName + '.' + e.className + '#' + e.id + ' ' +
  Math.round(e.getBoundingClientRect().right))"""


def _job(allocation, user, n, **fields) -> Job:
    base = {
        "allocation": allocation,
        "created_by": user,
        "token": f"portal-job-phone{n}",
        "scheduler_id": str(4000 + n),
        "gpus": 1,
        "wall_time_minutes": 15,
        "estimate_gpu_hours": Decimal("0.029"),
        "estimate_source": "recommender",
        "params": PARAMS,
        "submitted_at": timezone.now(),
        "started_at": timezone.now(),
    }
    return Job.objects.create(**{**base, **fields})


def _finished(**more) -> dict:
    return {
        "state": "succeeded",
        "metrics": METRICS,
        "gpu_seconds": 47,
        "exit_code": 0,
        "finished_at": timezone.now(),
        "log_tail": "epoch 8\n" + "/very/long/path" * 20,
        "progress": {
            "state": "succeeded",
            "epoch": 8,
            "epochs": 8,
            "step": 15,
            "steps_per_epoch": 15,
            "loss": 0.04,
            "images_per_s": 15.6,
            "train_images_per_s": 16.4,
            "eta_s": 0,
            "history": [[15 * e, 0.7 / e] for e in range(1, 9)],
        },
        **more,
    }


@pytest.fixture
def demo_world(live_server):
    call_command("seed_demo", password=PASSWORD, verbosity=0)
    project = Project.objects.get(code="ABC-DEF-001")
    researcher = project.memberships.get(user__username="researcher").user
    local = Facility.objects.get(slug="local")
    today = timezone.localdate()
    allocation = Allocation.objects.create(
        project=project,
        facility=local,
        node_type=local.node_types.get(),
        kind="trial",
        gpu_hours=Decimal(400),
        start_date=today - dt.timedelta(days=3),
        end_date=today + dt.timedelta(days=87),
        status="active",
        account_name="abc-def-001-local-1",
    )
    usage_record_many(
        [
            UsageRecord(
                allocation=allocation,
                source="local",
                external_id="phone-1",
                period_start=timezone.now() - dt.timedelta(days=1),
                period_end=timezone.now(),
                gpu_seconds=5400,
                cost=Decimal("0"),
            )
        ]
    )
    done = _job(allocation, researcher, 1, **_finished())
    running = _job(
        allocation,
        researcher,
        2,
        state="running",
        progress={
            "state": "running",
            "epoch": 3,
            "epochs": 8,
            "step": 7,
            "steps_per_epoch": 15,
            "loss": 0.4,
            "images_per_s": 15.1,
            "train_images_per_s": 16.2,
            "eta_s": 80,
            "history": [[15, 0.69], [30, 0.5], [37, 0.4]],
        },
    )
    sweep = Sweep.objects.create(
        allocation=allocation,
        created_by=researcher,
        name="lr check",
        grid=GRID,
        params={"dataset": "synthetic-ct", "synthetic_n": 300},
        size=6,
        token="portal-sweep-phone",
        concurrency=2,
        estimate_gpu_hours=Decimal("0.150"),
    )
    for i, (lr, fold) in enumerate([(lr, f) for lr in GRID["lrs"] for f in range(3)]):
        cell = {
            "sweep": sweep,
            "token": sweep.token,
            "array_index": i,
            "params": {
                **PARAMS,
                "lr": lr,
                "lr_step": 5,
                "weight_decay": 0.0001,
                "fold": fold,
                "folds": 3,
            },
        }
        _job(
            allocation,
            researcher,
            10 + i,
            **cell,
            **(_finished() if i < 4 else {"state": "queued"}),
        )
    request = AllocationRequest.objects.create(
        project=project,
        facility=Facility.objects.get(slug="baskerville"),
        requested_by=researcher,
        kind="full",
        gpu_hours=2400,
        start_date=today,
        end_date=today + dt.timedelta(days=90),
        justification="We train DenseNet-121 classifiers on chest CT slices. " * 4,
        status="submitted",
        submitted_at=timezone.now(),
    )
    dataset = Dataset.objects.create(
        project=project,
        name="ward-ct-2024-with-a-long-name",
        location="ward-ct/2024/" + "series-" * 8,
        modality="ct",
        sensitivity="internal",
    )
    now = timezone.now()
    notebook = NotebookSession.objects.create(
        allocation=allocation,
        user=researcher,
        gpus=1,
        hours=Decimal("2.50"),
        state="running",
        server_name="nb-phone",
        url="http://127.0.0.1:8081/user/researcher/nb-phone/lab",
        workdir="/srv/projects/ABC-DEF-001/notebooks/researcher",
        reserved_gpu_seconds=9000,
        started_at=now - dt.timedelta(minutes=12),
        last_activity=now - dt.timedelta(minutes=3),
        spawned_at=now - dt.timedelta(minutes=12),
    )
    return {
        "project": project,
        "allocation": allocation,
        "done": done,
        "running": running,
        "sweep": sweep,
        "request": request,
        "dataset": dataset,
        "notebook": notebook,
    }


def _pages(world) -> dict[str, list[tuple[str, str]]]:
    p, a = world["project"].pk, world["allocation"].pk
    walkthrough = Walkthrough.objects.order_by("pk").first()
    chart = Flowchart.objects.order_by("pk").first()
    return {
        "researcher": [
            ("dashboard", "/"),
            ("request-new", "/requests/new/"),
            ("trial-form", "/requests/new/?facility=local&kind=trial"),
            ("request-list", "/requests/"),
            ("allocation-list", "/allocations/"),
            ("request", f"/requests/{world['request'].pk}/"),
            ("allocation", f"/allocations/{a}/"),
            ("project", f"/projects/{p}/"),
            ("datasets", f"/projects/{p}/datasets/"),
            ("dataset-edit", f"/projects/{p}/datasets/{world['dataset'].pk}/"),
            ("job-finished", f"/jobs/{world['done'].pk}/"),
            ("job-running", f"/jobs/{world['running'].pk}/"),
            ("sweep", f"/sweeps/{world['sweep'].pk}/"),
            ("notebook", f"/notebooks/{world['notebook'].pk}/"),
            ("recommend-empty", "/recommend/"),
            ("recommend", RECOMMEND),
            ("benchmarks", "/benchmarks/"),
            ("onboarding", "/onboarding/"),
            ("knowledge", "/knowledge/"),
            ("knowledge-page", f"/knowledge/{walkthrough.slug}/"),
            ("notifications", "/account/notifications/"),
            ("usage-report-member", "/reports/usage/"),
            ("not-found", "/no/such/page/"),
        ],
        "pi": [("usage-report-pi", "/reports/usage/"), ("project-pi", f"/projects/{p}/")],
        "reviewer": [
            ("review-queue", "/review/"),
            ("staff-home", "/staff/"),
            ("request-review", f"/requests/{world['request'].pk}/"),
            ("onboarding-stats", f"/onboarding/stats/{chart.pk}/"),
        ],
        "admin": [("usage-report-admin", "/reports/usage/?group_by=user")],
    }


def test_every_page_fits_a_phone(chromium, live_server, demo_world):
    SHOTS.mkdir(parents=True, exist_ok=True)
    too_wide = {}
    for role, pages in _pages(demo_world).items():
        for width in (PHONE, LAPTOP):
            context = chromium.new_context(viewport={"width": width, "height": 900})
            page = context.new_page()
            page.set_default_timeout(60_000)
            login(page, live_server, role, PASSWORD)
            for name, path in pages:
                page.goto(f"{live_server.url}{path}")
                page.wait_for_load_state("networkidle")
                page.screenshot(path=str(SHOTS / f"{name}-{width}.png"), full_page=True)
                if width == PHONE:
                    wide = page.evaluate("document.documentElement.scrollWidth")
                    if wide > PHONE:
                        too_wide[name] = (wide, page.evaluate(WIDEST))
            context.close()
    assert too_wide == {}, f"pages wider than {PHONE} px: {too_wide}"
