"""The dashboard's rows rendered in Python (portal/dashboard_rows.py): every value escaped, the
ledger figure never rounded to zero, granted against requested, links to each object."""
from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.contrib.humanize.templatetags.humanize import intcomma
from django.template.defaultfilters import date as date_format
from django.template.defaultfilters import floatformat
from django.test import Client

from allocations.models import UsageRecord
from portal import dashboard_rows as rows
from tests.factories import AllocationFactory, RequestFactory

pytestmark = pytest.mark.django_db


def test_rows_escape_what_people_typed_and_show_exact_figures(researcher, project, facility):
    project.title = "<script>alert(1)</script>"
    project.save()
    facility.name = 'Bask"erville <b>'
    facility.save()
    allocation = AllocationFactory(project=project, facility=facility, gpu_hours=Decimal("10"))
    UsageRecord.objects.create(allocation=allocation, source="slurm", external_id="s:1",
                               period_start="2026-11-23T10:00:00Z",
                               period_end="2026-11-23T10:00:09Z", gpu_seconds=9)
    request = RequestFactory(project=project, facility=facility, gpu_hours=300,
                                       granted_gpu_hours=200, status="approved")
    client = Client()
    client.force_login(researcher)
    html = client.get("/").content.decode()

    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "Bask&quot;erville &lt;b&gt;" in html and "<b>" not in html
    assert f'href="/allocations/{allocation.pk}/">#{allocation.pk} ABC-DEF-001</a>' in html
    assert 'value="0.002500" aria-label="GPU-hours used"' in html
    assert 'title="0.0025 (exact)">0.0025</span> used · 10 granted' in html
    assert f'href="/requests/{request.pk}/"' in html
    assert '200 <span class="muted">of 300</span>' in html
    assert f'href="/projects/{project.pk}/"><strong>ABC-DEF-001</strong></a>' in html


@pytest.mark.parametrize("value", ["0", "0.49", "0.5", "1.5", "2.5", "12.49", "1234.5", "99999.99"])
def test_whole_hours_read_as_the_templates_floatformat(value):
    assert rows._whole(Decimal(value)) == floatformat(Decimal(value), 0)


@pytest.mark.parametrize("value", [0, 7, 999, 1000, 25000, 1234567])
def test_grouped_figures_read_as_the_templates_intcomma(value):
    assert rows._grouped(value) == intcomma(value)


def test_dates_read_as_the_templates_date_filter():
    for month in range(1, 13):
        day = dt.date(2027, month, 5 if month % 2 else 28)
        assert rows._date(day) == date_format(day, "d M Y")
