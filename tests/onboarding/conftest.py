from __future__ import annotations

import pytest

from allocations.demo import seed_catalogue


@pytest.fixture
def chart(db):
    """The demo catalogue, the seeded (published) Turing chart and the knowledge base."""
    from portal.knowledge import demo as knowledge_demo
    from portal.onboarding import demo

    seed_catalogue()
    knowledge_demo.seed()
    return demo.seed()


def all_paths(flow: dict) -> list[tuple[list[str], dict]]:
    """Every path from the start to an outcome in a flow payload: (choice keys, outcome)."""
    questions = {q["key"]: q for q in flow["questions"]}
    outcomes = {o["key"]: o for o in flow["outcomes"]}
    found: list[tuple[list[str], dict]] = []

    def visit(key: str, path: list[str]) -> None:
        for choice in questions[key]["choices"]:
            target = choice["next"]
            if target["type"] == "question":
                visit(target["key"], path + [choice["key"]])
            else:
                found.append((path + [choice["key"]], outcomes[target["key"]]))

    visit(flow["start"], [])
    return found
