"""The per-process cache of unbound form HTML (portal/formcache.py) gives exactly the HTML a fresh
render gives, and never one form's HTML for another's content."""
from __future__ import annotations

import pytest
from django.template.loader import render_to_string
from django.utils.safestring import mark_safe

from allocations.models import Dataset
from launcher.forms import LaunchForm, SweepForm
from portal import formcache
from tests.factories import AllocationFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def empty_cache():
    formcache.clear()
    yield
    formcache.clear()


def fresh(form) -> str:
    return mark_safe("".join(render_to_string("includes/field.html", {"field": bf}) for bf in form))


@pytest.mark.parametrize("form_class", [LaunchForm, SweepForm])
def test_a_cached_render_is_the_fresh_render(form_class):
    allocation = AllocationFactory()
    first = formcache.render_fields(form_class(allocation=allocation))
    again = formcache.render_fields(form_class(allocation=allocation))
    assert len(formcache._cache) == 1
    assert first == again == fresh(form_class(allocation=allocation))
    assert 'name="epochs"' in first


def test_a_projects_own_datasets_change_the_html():
    allocation = AllocationFactory()
    before = formcache.render_fields(LaunchForm(allocation=allocation))
    Dataset.objects.create(project=allocation.project, name="ward-ct", location="ward-ct",
                           modality="ct", sensitivity="public")
    after = formcache.render_fields(LaunchForm(allocation=allocation))
    assert "ward-ct" not in before and "ward-ct" in after
    other = formcache.render_fields(LaunchForm(allocation=AllocationFactory()))
    assert "ward-ct" not in other
    assert len(formcache._cache) == 2  # the other project renders as the first did


def test_initial_values_and_presets_are_part_of_the_key():
    allocation = AllocationFactory()
    plain = formcache.render_fields(SweepForm(allocation=allocation))
    claire = formcache.render_fields(SweepForm(allocation=allocation,
                                               initial=SweepForm.preset_initial("claire")))
    assert plain != claire and 'value="CLAIRE"' in claire


def test_a_bound_form_is_rendered_afresh_with_its_errors():
    allocation = AllocationFactory()
    formcache.render_fields(LaunchForm(allocation=allocation))
    bound = LaunchForm({"model": "resnet18", "epochs": "-3"}, allocation=allocation)
    bound.is_valid()
    html = formcache.render_fields(bound)
    assert 'value="-3"' in html and "errorlist" in html
    assert len(formcache._cache) == 1
