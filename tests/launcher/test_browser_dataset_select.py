"""The launch and sweep forms' dataset choice reads whole in a real browser at 1280 and 390 px
(issue 39: "synthetic-ct (generate" at 1280 px): the select is wider than the text of every
option it offers, the project's registered datasets included."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.utils import timezone

from allocations.models import Allocation, Dataset
from tests.browser import login
from tests.factories import FacilityFactory

pytestmark = pytest.mark.django_db(transaction=True)

# Room each option's text has: the select's inner width less its padding and the arrow (about
# 24 px in chromium); the text measured in the select's own font.
ROOM = """select => {
  const style = getComputedStyle(select);
  const context = document.createElement('canvas').getContext('2d');
  context.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
  const padding = parseFloat(style.paddingLeft) + parseFloat(style.paddingRight);
  const room = select.clientWidth - padding - 24;
  return [...select.options].map(o => [o.text, context.measureText(o.text).width, room]);
}"""


@pytest.fixture
def allocation(project, researcher):
    facility = FacilityFactory(slug="local-ds", name="Local", backend="local")
    Dataset.objects.create(
        project=project,
        name="ward-scans",
        location="scans",
        modality="ct",
        sensitivity="internal",
        created_by=researcher,
    )
    today = timezone.localdate()
    return Allocation.objects.create(
        project=project,
        facility=facility,
        gpu_hours=Decimal(40),
        start_date=today,
        end_date=today + dt.timedelta(days=30),
        status="active",
        account_name="ds-a1",
    )


@pytest.mark.parametrize("width", [1280, 390])
def test_every_dataset_choice_reads_whole(chromium, live_server, researcher, allocation, width):
    context = chromium.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    try:
        login(page, live_server, researcher.username)
        page.goto(f"{live_server.url}/allocations/{allocation.pk}/")
        for select_id in ("#id_dataset", "#sweep_dataset"):
            options = page.locator(select_id).evaluate(ROOM)
            texts = [text for text, _, _ in options]
            assert texts == [
                "synthetic-ct (generated)",
                "synthetic-xray (generated)",
                "ward-scans: CT, internal",
            ]
            for text, needed, room in options:
                assert needed <= room, (select_id, text, needed, room)
        assert page.evaluate("document.documentElement.scrollWidth") <= width
    finally:
        context.close()
