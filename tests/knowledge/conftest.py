from __future__ import annotations

import pytest

from allocations.demo import seed_catalogue


@pytest.fixture
def knowledge(db):
    from portal.knowledge import demo

    seed_catalogue()
    demo.seed()
