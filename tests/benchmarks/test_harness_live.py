"""The harness measures a tiny model on CPU and posts it to the live portal with a real token."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from allocations.demo import seed_catalogue
from benchmarks.demo import seed
from benchmarks.harness.__main__ import main
from benchmarks.models import BENCHMARKERS_GROUP, BenchmarkResult
from portal.tokens.services import account_token_create
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)
RUN = [
    "run",
    "--model",
    "resnet18",
    "--dims",
    "2",
    "--image-size",
    "32",
    "--batch-size",
    "2",
    "--repeats",
    "2",
    "--warmup",
    "1",
    "--steps",
    "1",
    "--threads",
    "1",
    "--node-type",
    "local-cpu",
    "--notes",
    "live test",
]


def test_harness_posts_a_measurement_that_lands_in_the_database(live_server, capsys):
    seed_catalogue()
    seed()
    bea = UserFactory(username="bea")
    bea.groups.add(Group.objects.get(name=BENCHMARKERS_GROUP))
    token = account_token_create(user=bea)[1]

    assert main(RUN + ["--post", live_server.url, "--token", token]) == 0

    stored = BenchmarkResult.objects.get(submitted_by=bea)
    assert (stored.node_type.name, stored.workload.key, stored.image_size) == (
        "local-cpu",
        "resnet18-2d",
        32,
    )
    assert stored.source == "measured" and stored.repeats == 2 and stored.throughput > 0
    assert stored.software["torch"] and stored.measured_at is not None
    assert f"posted: id {stored.pk}" in capsys.readouterr().err


def test_a_researchers_token_is_refused_and_nothing_is_stored(live_server, capsys):
    seed_catalogue()
    seed()
    token = account_token_create(user=UserFactory(username="rosalind"))[1]
    assert main(RUN + ["--post", live_server.url, "--token", token]) == 2
    assert "403" in capsys.readouterr().err
    assert not BenchmarkResult.objects.filter(submitted_by__username="rosalind").exists()
