"""Usage alerts: at the facility's thresholds and when the 7-day rate says the allocation runs
out more than 7 days early, each once per grant, to the PI and members by email (or in the
weekly digest of those who chose it), recorded, and shown on the dashboard and the allocation
page while they hold."""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal

import pytest
from django.core import mail
from django.core.exceptions import ValidationError
from django.test import Client
from django.utils import timezone

from allocations.digests import digest_send
from allocations.models import Allocation, NotificationPreference, UsageAlert
from allocations.services import usage_check_thresholds
from allocations.services.allocations import allocation_top_up
from allocations.tasks import check_usage_alerts
from tests.factories import AllocationFactory, FacilityFactory, charge

pytestmark = pytest.mark.django_db


def use(allocation, *, hours: float, days_ago: int = 0, n: int = 0) -> None:
    moment = timezone.now() - dt.timedelta(days=days_ago)
    charge(
        allocation=allocation,
        source="local",
        external_id=f"alert-{allocation.pk}-{days_ago}-{n}-{hours}",
        period_start=moment,
        period_end=moment,
        gpu_seconds=int(hours * 3600),
    )


def alerts_sent(outbox=None) -> list:
    return [m for m in (outbox or mail.outbox) if "usage alert" in m.subject]


@pytest.fixture
def check(django_capture_on_commit_callbacks):
    """Run the check as ingestion does, with its emails sent (after the commit)."""

    def run(allocation) -> list[int]:
        with django_capture_on_commit_callbacks(execute=True):
            return usage_check_thresholds(allocation_id=allocation.pk)

    return run


@pytest.fixture
def allocation(project, facility):
    """100 GPU-hours for 60 days, started today: no rate yet, so only thresholds alert."""
    return AllocationFactory(project=project, facility=facility, gpu_hours=Decimal(100))


def test_crossing_80_percent_sends_exactly_one_email_to_the_pi(allocation, pi, check):
    use(allocation, hours=60)
    assert check(allocation) == [50]
    mail.outbox.clear()
    use(allocation, hours=21)  # 81%
    assert check(allocation) == [80]
    assert check(allocation) == []  # the same check again: nothing more
    (email,) = mail.outbox
    assert pi.email in email.to and "usage alert" in email.subject
    assert "80% of the granted GPU-hours used (81.00 of 100.00)" in email.body
    record = UsageAlert.objects.get(allocation=allocation, thresholds=[80])
    assert record.kind == "threshold" and record.event.comment in email.body
    assert pi.email in record.emailed_to and record.emailed_at is not None


def test_95_is_a_threshold_by_default_and_100_exhausts(allocation, check):
    assert allocation.facility.alert_thresholds == [50, 80, 95, 100]
    use(allocation, hours=96)
    assert check(allocation) == [50, 80, 95]
    use(allocation, hours=4)
    assert check(allocation) == [100]
    allocation.refresh_from_db()
    assert allocation.status == "exhausted" and allocation.alerted_thresholds == [50, 80, 95, 100]
    assert len(alerts_sent()) == 2  # one email per check that crossed, naming the highest
    assert "95% of the granted GPU-hours used" in mail.outbox[0].body


def test_a_facility_alerting_only_at_90_sends_nothing_at_80(project, check, api, researcher):
    facility = FacilityFactory(slug="ninety", alert_thresholds=[90])
    shown = api.as_user(researcher).get("/api/v1/facilities/ninety/").json()
    assert shown["alert_thresholds"] == [90]
    allocation = AllocationFactory(project=project, facility=facility, gpu_hours=Decimal(100))
    use(allocation, hours=85)
    assert check(allocation) == [] and mail.outbox == []
    use(allocation, hours=6)
    assert check(allocation) == [90]
    (email,) = mail.outbox
    assert "90% of the granted GPU-hours used" in email.body


@pytest.mark.parametrize(
    "thresholds,ok",
    [
        ([50, 80, 95, 100], True),
        ([90], True),
        ([1, 100], True),
        ([], False),
        ([80, 50], False),  # not ascending
        ([50, 50], False),  # twice
        ([0, 50], False),
        ([50, 101], False),
        (["50"], False),
        ([True], False),
        ([50.5], False),
        ("50,80", False),
    ],
)
def test_thresholds_are_whole_percents_from_1_to_100_ascending(thresholds, ok):
    facility = FacilityFactory.build(slug="thresholds", alert_thresholds=thresholds)
    if ok:
        facility.full_clean()
        assert facility.thresholds == tuple(thresholds)
    else:
        with pytest.raises(ValidationError) as refused:
            facility.full_clean()
        assert "alert_thresholds" in refused.value.message_dict
        assert facility.thresholds == (50, 80, 95, 100)  # what the check uses meanwhile


@pytest.fixture
def early(project, facility):
    """100 GPU-hours to be used over 60 days, at 5 a day for the last week: 35 used, 65 left
    run out in 13 days, 47 days before the end date."""
    today = timezone.localdate()
    allocation = AllocationFactory(
        project=project,
        facility=facility,
        gpu_hours=Decimal(100),
        start_date=today - dt.timedelta(days=10),
        end_date=today + dt.timedelta(days=60),
    )
    for days_ago in range(1, 8):
        use(allocation, hours=5, days_ago=days_ago)
    return allocation


def test_the_projection_alert_goes_out_once(early, pi, researcher, check):
    run_out = timezone.localdate() + dt.timedelta(days=13)
    assert check(early) == [] and check(early) == []
    (email,) = mail.outbox
    assert "runs out early" in email.subject
    assert {pi.email, researcher.email} <= set(email.to)
    assert (
        f"At the 7-day rate (5.00 GPU-hours a day, the use charged in the 7 whole days before "
        f"today) the granted GPU-hours run out on {run_out:%d %b %Y}, 47 days before the end "
        f"date" in email.body
    )
    (record,) = UsageAlert.objects.filter(allocation=early, kind="projection")
    assert record.runs_out_on == run_out and set(record.emailed_to) >= {pi.email}
    early.refresh_from_db()
    assert early.projection_alerted_at is not None


def test_a_top_up_lets_the_projection_alert_go_out_again(early, check):
    check(early)
    allocation_top_up(allocation=Allocation.objects.get(pk=early.pk), gpu_hours=20, by=None)
    early.refresh_from_db()
    assert early.projection_alerted_at is None and early.alerted_thresholds == []
    check(early)  # 85 left at 5 a day: 17 days, still far before the end date
    assert len([m for m in mail.outbox if "runs out early" in m.subject]) == 2
    assert UsageAlert.objects.filter(allocation=early, kind="projection").count() == 2


def test_the_beat_sends_the_projection_alert_once_without_a_new_charge(
    early, django_capture_on_commit_callbacks
):
    assert mail.outbox == []  # charged, never checked (the rate moved at midnight)
    with django_capture_on_commit_callbacks(execute=True):
        assert check_usage_alerts() == 1
        assert check_usage_alerts() == 0
    (email,) = mail.outbox
    assert "runs out early" in email.subject


def test_an_allocation_on_course_gets_no_projection_alert(project, facility, check):
    today = timezone.localdate()
    on_course = AllocationFactory(
        project=project,
        facility=facility,
        gpu_hours=Decimal(100),
        start_date=today - dt.timedelta(days=10),
        end_date=today + dt.timedelta(days=30),
    )
    for days_ago in range(1, 8):
        use(on_course, hours=1, days_ago=days_ago)  # 93 left at 1 a day: after the end
    assert check(on_course) == [] and mail.outbox == []
    assert check_usage_alerts() == 0
    assert not UsageAlert.objects.filter(allocation=on_course).exists()


def test_the_weekly_digest_lists_both_kinds_of_alert(early, allocation, pi, researcher, check):
    preference = NotificationPreference.objects.create(
        user=researcher, usage_alerts=NotificationPreference.Usage.WEEKLY
    )
    check(early)  # the projection alert
    use(allocation, hours=55)
    check(allocation)  # 50%
    assert alerts_sent() and all(researcher.email not in m.to for m in alerts_sent())
    assert all(pi.email in m.to for m in alerts_sent())
    mail.outbox.clear()
    later = timezone.now() + dt.timedelta(minutes=1)
    assert digest_send(preference=preference, now=later) == 1
    (digest,) = mail.outbox
    assert digest.to == [researcher.email]
    assert f"allocation #{early.pk}" in digest.body and "run out on" in digest.body
    assert f"allocation #{allocation.pk}" in digest.body and "50% of the granted" in digest.body


def test_the_dashboard_and_the_page_show_a_notice_while_it_holds(early, allocation, researcher):
    use(allocation, hours=82)
    client = Client()
    client.force_login(researcher)
    dashboard = client.get("/").content.decode()
    banner = re.search(r'id="usage-notices"[^>]*>(.*?)</div>', dashboard, re.S).group(1)
    text = re.sub(r"<[^>]+>", "", banner)
    assert f"Allocation #{allocation.pk}: 82.0% of the 100.00 granted GPU-hours are used" in text
    assert "past the 80% alert" in text
    assert f"Allocation #{early.pk}: At the 7-day rate (5.00 GPU-hours a day" in text
    assert "47 days before the end date" in text

    page = client.get(f"/allocations/{early.pk}/").content.decode()
    notice = re.search(r'id="usage-notices"[^>]*>(.*?)</div>', page, re.S).group(1)
    assert "run out on" in notice and "82.0%" not in notice  # only this allocation's


def test_no_notice_without_cause(allocation, researcher):
    use(allocation, hours=10)
    client = Client()
    client.force_login(researcher)
    assert 'id="usage-notices"' not in client.get("/").content.decode()
    assert 'id="usage-notices"' not in client.get(f"/allocations/{allocation.pk}/").content.decode()
