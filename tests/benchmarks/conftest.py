"""Fixtures for the benchmark tests: the catalogue as recommender inputs (no database)."""

from __future__ import annotations

import pytest

from benchmarks import catalogue


@pytest.fixture
def workloads():
    return catalogue.WORKLOADS


@pytest.fixture
def seed_nodes():
    """The catalogue's node types by name, merged with their facilities' policies."""
    return {n.name: n for n in catalogue.node_type_infos()}
