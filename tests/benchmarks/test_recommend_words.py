"""/recommend/ in plain words (issue 39): every reason closes the parentheses it opens, a row
says what its prediction rests on ("Measured", "Predicted from ...") rather than the
recommender's method names, refusals stand apart from the other reasons, and the page explains
the words it still uses."""

from __future__ import annotations

from html import unescape
from urllib.parse import urlencode

import pytest

from benchmarks.catalogue import all_results
from benchmarks.presenters import BASIS, ranked_rows
from benchmarks.recommender import recommend
from tests.benchmarks.helpers import make_node, make_request

REQUESTS = [
    dict(model="densenet121", dims=2, image_size=224, precision="bf16", gpus=1, batch_size=64),
    dict(model="resnet50", dims=2, image_size=224, precision="fp16", gpus=4, batch_size=64),
    dict(model="gpt2-xxl", dims=1, image_size=128, precision="fp32", gpus=1, batch_size=1),
]


@pytest.fixture
def rows(workloads, seed_nodes):
    """Every seeded node type, plus one without bf16 units, for each request above."""
    fp32_only = make_node("old", peak_tflops={"fp16": None, "bf16": None, "fp32": 10.0})
    return [
        ranked_rows(
            [
                r.as_dict()
                for r in recommend(
                    make_request(**fields),
                    workloads,
                    [*seed_nodes.values(), fp32_only],
                    all_results(),
                )
            ]
        )
        for fields in REQUESTS
    ]


def test_every_reason_closes_its_parentheses(rows):
    reasons = [s for ranked in rows for row in ranked for s in row.result["reasons"]]
    assert len(reasons) > 50
    unbalanced = [s for s in reasons if s.count("(") != s.count(")")]
    assert unbalanced == []


def test_each_row_says_what_its_prediction_rests_on_in_words(rows):
    seen = {row.result["method"]: row.basis for ranked in rows for row in ranked}
    assert seen == {
        "measured": "Measured: this model on this chip",
        "flops_scaled": "Predicted from another model measured on this chip",
        "roofline": "Predicted from this chip's peak speed (nothing measured on it)",
        "none": "No prediction",
    }
    words = [s for ranked in rows for row in ranked for s in row.result["reasons"]]
    assert not [s for s in words if "N/A" in s or s.startswith("roofline")]


def test_refusals_stand_apart_from_the_other_reasons(rows):
    old = next(row for row in rows[0] if row.result["node_type"] == "old")
    assert not old.usable
    assert old.refusals == [
        "acc-old has no bf16 support (the catalogue lists no bf16 speed for it)."
    ]
    assert old.reasons and not any("Not eligible" in s for s in old.reasons)
    usable = [row for row in rows[0] if row.usable]
    assert usable and all(row.refusals == [] for row in usable)


@pytest.mark.django_db
def test_the_page_uses_the_words_and_explains_them(client):
    from allocations.demo import seed_catalogue
    from benchmarks.demo import seed

    seed_catalogue()
    seed()
    query = dict(REQUESTS[0], dataset_samples=100000, epochs=50, data_sensitivity="internal")
    html = unescape(client.get(f"/recommend/?{urlencode(query)}").content.decode())
    ranked = html.split('id="ranked"')[1].split("</table>")[0]
    assert BASIS["flops_scaled"] in ranked and BASIS["roofline"] in ranked
    assert "flops_scaled ·" not in html and "roofline ·" not in html
    assert "best trade-off" in ranked and "What do these columns and words mean?" in html
    # The explanation names the recommender's terms, so the API's values can be looked up.
    words = html.split('class="words"')[1].split("</details>")[0]
    for term in ("<code>flops_scaled</code>", "<code>roofline</code>", "Pareto front", "bf16"):
        assert term in words
    # A row's figures carry their labels for the phone's cards.
    assert 'data-label="Time (h)"' in ranked and 'data-label="Memory per GPU"' in ranked
