"""Charts read on a phone (issue 39): at 390 px the usage report (as a PI with usage), the
recommender with a result and the onboarding chart do not scroll sideways, and no two of a
chart's text labels (tick numbers, titles, legend entries, point labels; the flowchart's
questions and answers) overlap or reach past the screen. At 1280 px the flowchart writes every
answer whole, each clear of the others and of the nodes. The recommender's ranked systems are
cards at 390 px: the three figures of a system side by side, not a 1,000 px row."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.utils import timezone

from allocations.demo import seed_catalogue
from launcher.models import Job
from portal.onboarding import selectors as onboarding
from tests.browser import login
from tests.factories import AllocationFactory, FacilityFactory, charge

pytestmark = pytest.mark.django_db(transaction=True)
PHONE, LAPTOP = 390, 1280
RECOMMEND = (
    "/recommend/?model=densenet121&dims=2&image_size=224&dataset_samples=100000&epochs=50"
    "&precision=bf16&gpus=1&batch_size=64&data_sensitivity=internal"
)
# Plotly's text: tick numbers, the titles, legend entries, annotations and point labels.
CHART_TEXT = (
    ".xtick text, .ytick text, .gtitle, .xtitle, .ytitle, .legendtext, .annotation-text, "
    ".textpoint text"
)
# The visible text boxes under each `root` selector, in page coordinates, each with how far
# it reaches past its root's sides (a title wider than its chart is cut there).
BOXES = """([roots, labels]) => [...document.querySelectorAll(roots)].map(root => {
  const edge = root.getBoundingClientRect();
  return [...root.querySelectorAll(labels)].filter(e => e.textContent.trim()).map(e => {
    const r = e.getBoundingClientRect();
    return {text: e.textContent.trim(), left: r.left, right: r.right,
            top: r.top + scrollY, bottom: r.bottom + scrollY,
            past: Math.max(edge.left - r.left, r.right - edge.right, 0)};
  }).filter(b => b.right > b.left && b.bottom > b.top);
})"""


def overlapping(boxes: list[dict]) -> list[tuple[str, str]]:
    """Pairs of boxes that share more than a pixel in both directions."""
    found = []
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            if min(a["right"], b["right"]) - max(a["left"], b["left"]) > 1 and (
                min(a["bottom"], b["bottom"]) - max(a["top"], b["top"]) > 1
            ):
                found.append((a["text"], b["text"]))
    return found


def outside(boxes: list[dict], width: int) -> list[str]:
    """Labels cut by the screen's edges or by their own chart's."""
    return [b["text"] for b in boxes if b["left"] < 0 or b["right"] > width or b["past"] > 1]


@pytest.fixture
def phone(chromium):
    context = chromium.new_context(viewport={"width": PHONE, "height": 844})
    page = context.new_page()
    page.set_default_timeout(30_000)
    yield page
    context.close()


@pytest.fixture
def usage(pi, researcher, project):
    """Three months of charges on two facilities and jobs of 1, 2 and 4 GPUs."""
    now = timezone.now()
    for n, facility in enumerate(
        [
            FacilityFactory(slug="hpc", name="HPC", gpu_hour_rate=Decimal("2")),
            FacilityFactory(slug="cloud", name="Cloud", gpu_hour_rate=Decimal("3")),
        ]
    ):
        allocation = AllocationFactory(project=project, facility=facility)
        for month in range(3):
            when = now - dt.timedelta(days=31 * month + n)
            job = Job.objects.create(
                allocation=allocation,
                created_by=researcher,
                gpus=2**month,
                state="succeeded",
                token=f"phone-{n}-{month}",
                submitted_at=when,
                started_at=when,
                finished_at=when + dt.timedelta(hours=1),
                gpu_seconds=3600 * 2**month,
            )
            charge(
                allocation=allocation,
                source="local",
                external_id=f"phone-{n}-{month}",
                period_start=when,
                period_end=when,
                gpu_seconds=3600 * 2**month * (n + 1),
                cost=Decimal(month + 1),
                job_id=job.pk,
            )


@pytest.fixture
def catalogue(db):
    """The demo catalogue, its benchmark results and the published onboarding chart."""
    from benchmarks.demo import seed as seed_benchmarks
    from portal.knowledge import demo as knowledge_demo
    from portal.onboarding import demo as onboarding_demo

    seed_catalogue()
    seed_benchmarks()
    knowledge_demo.seed()
    return onboarding_demo.seed()


def assert_charts_read_on_a_phone(page, charts: int) -> None:
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE
    drawn = page.evaluate(BOXES, [".chart", CHART_TEXT])
    assert len(drawn) == charts and all(len(boxes) > 4 for boxes in drawn)
    for boxes in drawn:
        assert overlapping(boxes) == [] and outside(boxes, PHONE) == []


def test_the_usage_report_reads_on_a_phone(phone, live_server, usage, pi):
    login(phone, live_server, pi.username)
    phone.goto(f"{live_server.url}/reports/usage/")
    phone.locator("#chart-usage .gtitle").wait_for()
    phone.locator("#chart-sizes .gtitle").wait_for()
    assert_charts_read_on_a_phone(phone, charts=2)


def test_the_recommender_reads_on_a_phone(phone, live_server, catalogue):
    phone.goto(f"{live_server.url}{RECOMMEND}")
    phone.locator("#chart-time-cost .gtitle").wait_for()
    phone.locator("#chart-precision .gtitle").wait_for()
    assert_charts_read_on_a_phone(phone, charts=2)
    # Every title whole on one screen: "Throughput per system per precision" was cut.
    titles = phone.evaluate(BOXES, [".chart", ".gtitle"])
    assert [t[0]["text"] for t in titles] == [
        "Time against cost per system",
        "Throughput per system per precision",
    ]
    # Each ranked system is a card: its time, GPU-hours and cost side by side on one line.
    first = phone.locator("#ranked tbody").first
    figures = [
        first.locator(f"td[data-label='{label}']").bounding_box()
        for label in ("Time (h)", "GPU-hours", "Cost (USD)")
    ]
    assert len({round(box["y"]) for box in figures}) == 1
    assert figures[0]["x"] < figures[1]["x"] < figures[2]["x"]
    assert first.bounding_box()["width"] <= PHONE
    # Its reasons are folded away under "Why" until asked for.
    reasons = first.locator(".reasons")
    assert not reasons.is_visible()
    first.get_by_text("Why").click()
    assert reasons.is_visible() and "samples/s" in reasons.inner_text()
    # The words are plain, and explained where they are still used.
    text = first.inner_text()
    assert "Predicted from another model measured on this chip" in text
    assert "flops_scaled" not in text
    phone.get_by_text("What do these columns and words mean?").click()
    assert phone.get_by_text("the Pareto front of time against cost").is_visible()


def test_the_onboarding_chart_reads_on_a_phone_and_a_laptop(phone, live_server, catalogue):
    phone.goto(f"{live_server.url}/onboarding/?path=cloud-no,data-internal")
    assert phone.evaluate("document.documentElement.scrollWidth") <= PHONE
    steps = phone.evaluate(BOXES, [".flow-vertical", ".flow-question, .flow-answer, .flow-dest"])[0]
    flow = onboarding.flow_payload(onboarding.chart_load(catalogue))
    questions = {q["key"]: q for q in flow["questions"]}
    # Every question and every answer is written whole, and none sits on another.
    answers = [c["label"] for q in flow["questions"] for c in q["choices"]]
    assert sorted(b["text"] for b in steps if b["text"] in answers) == sorted(answers)
    assert overlapping(steps) == [] and outside(steps, PHONE) == []
    current = phone.locator('.flow-vertical [data-node="q:notebooks"]')
    assert "current" in current.get_attribute("class")
    assert questions["notebooks"]["text"] in current.inner_text()

    phone.set_viewport_size({"width": LAPTOP, "height": 900})
    assert phone.locator(".flow-wide").is_visible()
    wide = phone.evaluate(BOXES, [".flow-wide", ".node text, .edge-label text"])[0]
    # No "The project or pr...": each answer whole, its lines joined.
    labels = phone.evaluate(
        """() => [...document.querySelectorAll('.flow-wide .edge-label text')].map(t =>
            [...t.querySelectorAll('tspan')].map(s => s.textContent).join(' '))"""
    )
    assert sorted(label.replace("- ", "-") for label in labels) == sorted(answers)
    assert overlapping(wide) == [] and outside(wide, LAPTOP) == []
