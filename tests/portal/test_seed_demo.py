"""`manage.py seed_demo` loads the demo world, and running it again changes nothing."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.contrib.auth import authenticate
from django.core.management import call_command

pytestmark = pytest.mark.django_db

DEMO_APPS = ("allocations", "benchmarks", "onboarding", "knowledge", "cloud")


def snapshot() -> dict[str, list[tuple]]:
    """Every row of the demo apps' models, as values (ids included)."""
    rows = {}
    for label in DEMO_APPS:
        for model in apps.get_app_config(label).get_models():
            fields = [
                f.attname for f in model._meta.concrete_fields if f.attname not in {"updated_at"}
            ]
            rows[model._meta.label] = sorted(
                map(repr, model.objects.order_by("pk").values_list(*fields))
            )
    return rows


def test_seed_demo_loads_the_design_facilities_users_and_content(capsys):
    call_command("seed_demo", "--password", "demo-pass")
    from allocations.models import Facility

    slugs = set(Facility.objects.values_list("slug", flat=True))
    assert {
        "baskerville",
        "jade2",
        "stanage",
        "dawn",
        "cosma8",
        "azure",
        "aws-spot",
        "local",
        "local-slurm",
        "local-cloud",
    } <= slugs
    for slug in ("local", "local-slurm", "local-cloud"):
        assert Facility.objects.get(slug=slug).trial_auto_approve
    for username in ("researcher", "pi", "reviewer", "admin"):
        assert authenticate(username=username, password="demo-pass"), username
    assert "demo-pass" in capsys.readouterr().out
    counts = {label: n for label, n in ((k, len(v)) for k, v in snapshot().items())}
    assert counts["benchmarks.BenchmarkResult"] > 0 and counts["onboarding.Question"] > 0
    assert counts["knowledge.Walkthrough"] > 0 and counts["cloud.PriceCatalogueEntry"] > 0


def test_running_seed_demo_again_changes_nothing():
    call_command("seed_demo", "--password", "demo-pass")
    first = snapshot()
    call_command("seed_demo")
    assert snapshot() == first
    assert authenticate(username="researcher", password="demo-pass")
