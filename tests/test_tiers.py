"""The tiers: a test's service markers come from the fixtures it uses (tests/conftest.py
NEEDS), and `make unit` deselects every marker that names a service."""

from __future__ import annotations

import configparser
import re
from pathlib import Path

from tests.conftest import NEEDS, pytest_collection_modifyitems

ROOT = Path(__file__).resolve().parents[1]


class _Item:
    def __init__(self, *fixtures: str) -> None:
        self.fixturenames = list(fixtures)
        self.markers: list[str] = []

    def add_marker(self, marker: str) -> None:
        self.markers.append(marker)


def test_a_test_is_marked_by_the_fixtures_it_reaches():
    plain = _Item("db", "researcher", "client")
    browsing = _Item("live_server", "page", "chromium")  # `page` reaches `chromium`
    on_slurm = _Item("slurm_allocation", "services_env", "member_tmp", "real_worker")
    pytest_collection_modifyitems([plain, browsing, on_slurm])
    assert plain.markers == [] and browsing.markers == ["browser"]
    assert on_slurm.markers == ["members", "slurm", "worker"]


def test_every_service_marker_is_declared_and_deselected_by_make_unit():
    ini = configparser.ConfigParser()
    ini.read(ROOT / "pytest.ini")
    declared = {
        line.split(":")[0].strip() for line in ini["pytest"]["markers"].splitlines() if line
    }
    makefile = (ROOT / "Makefile").read_text()
    deselected = set(re.search(r"^SERVICE_MARKS := (.+)$", makefile, re.M).group(1).split(" or "))
    assert set(NEEDS.values()) == deselected and deselected <= declared


def test_make_unit_runs_with_every_service_unreachable(isolated_network):
    """`make unit` in a network namespace with only loopback up and nothing listening: the
    services' ports are closed, so a unit-tier test that reached one would fail here. A sample
    of each app's unit tests keeps this quick; `make test` runs the whole tier the same way."""
    sample = [
        "tests/allocations/test_page_cache.py",
        "tests/launcher/test_toy_backend.py",
        "tests/core",
        "tests/portal/test_oidc_pages.py",
        "tests/test_waiting.py",
    ]
    done = isolated_network(
        ["make", "--no-print-directory", "unit", f"PYTEST_ARGS={' '.join(sample)}"]
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert re.search(r"\b\d+ passed", done.stdout) and "failed" not in done.stdout
